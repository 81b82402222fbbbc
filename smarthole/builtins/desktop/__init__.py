"""The SmartHole desktop bridge: routed messages in over WebSocket, notifications out.

A built-in plugin (``plugin``), off unless ``[desktop] enabled = true``. ``connection`` owns
the socket (the only importer of ``websockets``) in a thread of its own, reading without
pause into ``backlog``; ``intake`` writes the routed messages into the inbox as durable files,
a batch at a time, before each is acknowledged; ``records`` keeps the bridge's state and the
notifications waiting to be sent in the store; ``protocol`` reads and builds the frames.
"""
