"""The built-in ``workspace`` plugin: file tools over the home's ``workspace/`` folder.

``plugin`` registers the tools; ``paths`` confines every path the model writes to the
workspace; ``lines`` reads and edits numbered lines; ``search`` matches globs and lines.
"""
