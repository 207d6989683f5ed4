"""The issues the daemon writes: decision and review issues, their texts, who may write them."""
