"""One translation per JSON content: the template a program's code is generated for, bound to
each program's own state (codeshare), and kept on disk across processes (template_store).

Imports everything below it (base, `state`, `phv`, `pygen`, `cgen`), never `program`,
`engine` or `switch`; see docs/runtime.md.
"""
