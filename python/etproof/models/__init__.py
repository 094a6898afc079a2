"""Models etproof exports by name (``--model NAME``)."""
