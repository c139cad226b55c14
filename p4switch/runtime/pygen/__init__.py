"""Python code generation: BMv2 JSON expressions, primitives, calculations, the parser, the
controls and the deparser as Python source, lane groups as numpy code, and the generated
common packet flow (fastpath).

Imports the base modules, `state` and `phv`; see docs/runtime.md.
"""
