"""The SmartHole desktop bridge: routed messages in over WebSocket, notifications out.

A built-in plugin (``plugin``), off unless ``[desktop] enabled = true``. ``connection`` owns
the socket (the only importer of ``websockets``) in a thread of its own, reading without
pause into ``backlog``; ``intake`` hands the routed messages to the channel host's batched
take (durable files, a batch at a time, before each is acknowledged); ``records`` are the
channel's records (the bridge's state, its messages, the notifications owed as deliveries);
``protocol`` reads and builds the frames.
"""
