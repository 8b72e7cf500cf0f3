"""Stand-in for the OpenTelemetry SDK's span type, so that test_client.py can be imported.

opentelemetry-sdk is on the package index but its opentelemetry-semantic-conventions dependency is not, so the
SDK cannot be imported. test_client.py imports ReadableSpan at module level for one OTEL test (listed in
expected.json as "provider SDK missing"); the OpenTelemetry API itself is the real package. The langsmith SDK
imports TracerProvider from here only in OTEL mode, and finds none: OTEL mode stays unavailable, as without the SDK.
"""


class ReadableSpan:
    pass
