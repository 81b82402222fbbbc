"""The built-in plugins: smarthole's own behaviour, written as ordinary plugins.

Each registers through ``hookimpl`` as a third-party plugin does, and loads first
(``plugins.BUILTIN_PLUGINS`` names the modules; ``[plugins] disabled`` can turn one off).
``conversation`` gives the agent send_message, end_conversation, get_conversation and
search_conversations; ``workspace`` the file tools over the home's ``workspace/`` folder;
``teams`` start_task and finish_task, for agent teams; ``desktop`` the bridge to the SmartHole
desktop router. Nothing here is imported until its plugin loads.
"""
