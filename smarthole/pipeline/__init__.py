"""The pipeline of one message: inbox file -> Message, watching and claiming, the processor,
the turn runner, and the outbox writer."""
