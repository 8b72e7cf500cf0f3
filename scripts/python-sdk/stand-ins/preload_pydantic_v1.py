"""pytest plugin (-p preload_pydantic_v1): imports pydantic.v1 before any test runs.

test_client.py's test_create_chat_example imports langchain_core.messages inside @freeze_time; langchain-core
then imports pydantic.v1 for the first time, whose ConstrainedDate subclasses freezegun's FakeDate and fails
(metaclass conflict). In the SDK's own runs another module has imported it by then; here nothing has.
"""

import pydantic.v1  # noqa: F401
