"""The live web view of one home: conversations, the team's work, tasks (``smarthole web``).

An ASGI app (Starlette) built by :func:`smarthole.web.app.create_app`, served by uvicorn
(:mod:`smarthole.web.server`). It only reads the store, and writes only by dropping inbox files
(and by aborting a task, as ``smarthole tasks abort`` does). ``settings`` and ``command`` import
nothing of the web stack, so the CLI can build its parser and ``status`` can name the URL fast.
"""
