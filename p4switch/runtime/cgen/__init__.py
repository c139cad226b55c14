"""C code generation: the parser, the controls and the deparser as one C extension module
(nativemodule), translated over the Python generators' own analysis, the C every module begins
with (nativeprelude), and its build and cache (nativebuild).

Imports the base modules, `state`, `phv` and `pygen`; see docs/runtime.md.
"""
