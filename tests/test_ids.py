import pytest

from backend.errors import ValidationFailed
from backend.ids import collection_name, validate_id


@pytest.mark.parametrize("value", ["a", "chat1", "A-b_c9", "x" * 63])
def test_plain_ids_are_accepted(value):
    assert validate_id(value, field="chat_id") == value


@pytest.mark.parametrize("value", ["", "-a", "a-", "a_", "../x", "a/b", "a b", "a.b", "x" * 64, "chat\n"])
def test_ids_that_could_address_something_else_are_rejected(value):
    with pytest.raises(ValidationFailed) as raised:
        validate_id(value, field="chat_id")
    assert raised.value.details == {"field": "chat_id"}


def test_each_chat_has_its_own_collection():
    assert collection_name("abc") == "chat_abc"
    with pytest.raises(ValidationFailed):
        collection_name("../chat_other")
