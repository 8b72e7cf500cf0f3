#!/usr/bin/env bash
# Fetches s3proxy (a self-contained jar, see pom.xml) from Maven Central into
# <repo>/.cache/s3proxy/libs. Idempotent: a no-op when the folder is complete for
# the current pom.xml. Safe to run concurrently (parallel jest workers).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${SCRIPT_DIR}/../.." && pwd)"
POM="${SCRIPT_DIR}/pom.xml"
CACHE_DIR="${ROOT}/.cache/s3proxy"
LIBS_DIR="${CACHE_DIR}/libs"
MARKER="${LIBS_DIR}/.complete"

pom_hash() { sha256sum "${POM}" | cut -d' ' -f1; }

is_complete() {
  [[ -f "${MARKER}" ]] && [[ "$(cat "${MARKER}")" == "$(pom_hash)" ]] &&
    compgen -G "${LIBS_DIR}/s3proxy-*-jar-with-dependencies.jar" >/dev/null
}

if is_complete; then
  exit 0
fi

mkdir -p "${CACHE_DIR}"
exec 9>"${CACHE_DIR}/.fetch.lock"
flock -w 600 9

if is_complete; then
  exit 0
fi

command -v mvn >/dev/null || { echo "fetch.sh: mvn not found on PATH" >&2; exit 1; }

TMP_DIR="$(mktemp -d "${CACHE_DIR}/libs.tmp.XXXXXX")"
trap 'rm -rf "${TMP_DIR}"' EXIT

echo "fetch.sh: downloading s3proxy into ${LIBS_DIR}" >&2
mvn -B -q -f "${POM}" dependency:copy-dependencies \
  -Dstyle.color=never \
  -DincludeScope=runtime \
  -DoutputDirectory="${TMP_DIR}" 1>&2

compgen -G "${TMP_DIR}/s3proxy-*-jar-with-dependencies.jar" >/dev/null || {
  echo "fetch.sh: maven finished but the s3proxy jar is missing" >&2
  exit 1
}

pom_hash >"${TMP_DIR}/.complete"
rm -rf "${LIBS_DIR}"
mv "${TMP_DIR}" "${LIBS_DIR}"
trap - EXIT
echo "fetch.sh: done" >&2
