"""The SmartHole desktop bridge: routed messages in over WebSocket, notifications out.

A built-in plugin (``plugin``), off unless ``[desktop] enabled = true``. ``connection`` owns
the socket (the only importer of ``websockets``) in a thread of its own; ``intake`` writes each
routed message into the inbox as a durable file before it is acknowledged; ``records`` keeps
the bridge's state and the notifications waiting to be sent in the store; ``protocol`` reads
and builds the frames.
"""
