#!/usr/bin/env bash
# Fetches the jars of a single-node Kafka broker (see pom.xml) from Maven Central into
# <repo>/.cache/kafka/libs (idempotent, safe to run concurrently; see scripts/lib/maven-fetch.sh).
set -euo pipefail
DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "${DIR}/../lib/maven-fetch.sh" "${DIR}/pom.xml" kafka 'kafka_2.13-*.jar' 'the Kafka jars'
