#!/usr/bin/env bash
# Fetches the runtime dependencies of a pom.xml from Maven Central into <repo>/.cache/<name>/libs.
# Idempotent: a no-op when the folder is complete for the current pom.xml (the marker file holds the pom's
# hash and is written last). Safe to run concurrently (parallel jest workers): one download at a time.
#
#   maven-fetch.sh <pom.xml> <cache name> <glob of the jar that must be there> <what, for messages>
set -euo pipefail

POM="$1"
NAME="$2"
JAR_GLOB="$3"
WHAT="$4"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE_DIR="${ROOT}/.cache/${NAME}"
LIBS_DIR="${CACHE_DIR}/libs"
MARKER="${LIBS_DIR}/.complete"

pom_hash() { sha256sum "${POM}" | cut -d' ' -f1; }

is_complete() {
  [[ -f "${MARKER}" ]] && [[ "$(cat "${MARKER}")" == "$(pom_hash)" ]] &&
    compgen -G "${LIBS_DIR}/${JAR_GLOB}" >/dev/null
}

if is_complete; then
  exit 0
fi

mkdir -p "${CACHE_DIR}"
exec 9>"${CACHE_DIR}/.fetch.lock"
flock -w 600 9

# Another process may have finished the download while we waited for the lock.
if is_complete; then
  exit 0
fi

command -v mvn >/dev/null || { echo "fetch: mvn not found on PATH" >&2; exit 1; }

TMP_DIR="$(mktemp -d "${CACHE_DIR}/libs.tmp.XXXXXX")"
trap 'rm -rf "${TMP_DIR}"' EXIT

echo "fetch: downloading ${WHAT} into ${LIBS_DIR}" >&2
mvn -B -q -f "${POM}" dependency:copy-dependencies \
  -Dstyle.color=never \
  -DincludeScope=runtime \
  -DoutputDirectory="${TMP_DIR}" 1>&2

compgen -G "${TMP_DIR}/${JAR_GLOB}" >/dev/null || {
  echo "fetch: maven finished but ${JAR_GLOB} is missing" >&2
  exit 1
}

pom_hash >"${TMP_DIR}/.complete"
rm -rf "${LIBS_DIR}"
mv "${TMP_DIR}" "${LIBS_DIR}"
trap - EXIT
echo "fetch: ${WHAT} done ($(ls "${LIBS_DIR}" | wc -l) jars)" >&2
