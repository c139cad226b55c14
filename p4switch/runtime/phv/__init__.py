"""The packet header vector: where every field and header lives in the flat lists `f` and `v`
(layout), headers as machine words (wordplan), lane fields held as numpy arrays (vheaders),
and which slots a piece of generated code may write (writes).

Imports only the base modules and `state`; see docs/runtime.md.
"""
