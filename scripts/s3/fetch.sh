#!/usr/bin/env bash
# Fetches s3proxy (a self-contained jar, see pom.xml) from Maven Central into <repo>/.cache/s3proxy/libs
# (idempotent, safe to run concurrently; see scripts/lib/maven-fetch.sh).
set -euo pipefail
DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "${DIR}/../lib/maven-fetch.sh" "${DIR}/pom.xml" s3proxy 's3proxy-*-jar-with-dependencies.jar' 's3proxy'
