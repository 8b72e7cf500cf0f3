#!/usr/bin/env bash
# Fetches the official OTLP protocol definitions (the io.opentelemetry.proto:opentelemetry-proto jar,
# which ships the .proto files of github.com/open-telemetry/opentelemetry-proto) from Maven Central
# and unpacks the .proto files into <repo>/.cache/otel-proto. /otel/v1/traces decodes with protobufjs
# from these files. Idempotent and safe to run concurrently.
set -euo pipefail

VERSION="1.7.0-alpha"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${SCRIPT_DIR}/../.." && pwd)"
CACHE_DIR="${ROOT}/.cache/otel-proto"
MARKER="${CACHE_DIR}/.complete"

is_complete() { [[ -f "${MARKER}" ]] && [[ "$(cat "${MARKER}")" == "${VERSION}" ]]; }
if is_complete; then exit 0; fi

mkdir -p "${ROOT}/.cache"
exec 9>"${ROOT}/.cache/.otel-proto.lock"
flock -w 600 9
if is_complete; then exit 0; fi

command -v mvn >/dev/null || { echo "fetch-proto.sh: mvn not found on PATH" >&2; exit 1; }
TMP_DIR="$(mktemp -d "${ROOT}/.cache/otel-proto.tmp.XXXXXX")"
trap 'rm -rf "${TMP_DIR}"' EXIT

echo "fetch-proto.sh: downloading io.opentelemetry.proto:opentelemetry-proto:${VERSION}" >&2
mvn -B -q dependency:copy -Dstyle.color=never \
  -Dartifact="io.opentelemetry.proto:opentelemetry-proto:${VERSION}" \
  -DoutputDirectory="${TMP_DIR}/jar" 1>&2
JAR="${TMP_DIR}/jar/opentelemetry-proto-${VERSION}.jar"
mkdir -p "${TMP_DIR}/out"
if command -v unzip >/dev/null; then
  unzip -q -o "${JAR}" 'opentelemetry/proto/*.proto' -d "${TMP_DIR}/out"
else
  (cd "${TMP_DIR}/out" && jar xf "${JAR}" opentelemetry/proto)
fi
[[ -f "${TMP_DIR}/out/opentelemetry/proto/collector/trace/v1/trace_service.proto" ]] || {
  echo "fetch-proto.sh: trace_service.proto missing from the jar" >&2
  exit 1
}
echo "${VERSION}" >"${TMP_DIR}/out/.complete"
rm -rf "${CACHE_DIR}"
mv "${TMP_DIR}/out" "${CACHE_DIR}"
echo "fetch-proto.sh: done" >&2
