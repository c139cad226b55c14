"""Runs the compiler stages in order and packages the result."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

from .bmv2 import lower_program
from .checker import check
from .errors import CompileError, Diagnostic, Location, Reporter, SourceLines
from .lexer import tokenize
from .p4info import build_p4info, p4info_to_text
from .parser import parse
from .preprocess import Preprocessor
from .storage import StorageUnsupported


@dataclass
class CompileResult:
    bmv2: dict
    p4info_or_none: object  # p4.config.v1.p4info_pb2.P4Info; None: `p4info_refusal` says why
    warnings: list[Diagnostic] = field(default_factory=list)  # `.render()` each
    p4info_refusal: CompileError | None = None

    @property
    def p4info(self):
        """The P4Info; raises the CompileError p4c gives where a program has a BMv2 JSON but no
        P4Info (an implementation instantiated in a table property without a name)."""
        if self.p4info_refusal is not None:
            raise self.p4info_refusal
        return self.p4info_or_none

    def p4info_text(self) -> str:
        return p4info_to_text(self.p4info)


def compile_source(text: str, filename: str = "program.p4", include_dirs=(),
                   defines: dict[str, str] | None = None) -> CompileResult:
    reporter = Reporter(SourceLines())
    pre = Preprocessor(reporter, include_dirs, defines)
    return _compile(lambda: pre.run_text(text, filename), reporter, filename)


def compile_file(path, include_dirs=(), defines: dict[str, str] | None = None) -> CompileResult:
    path = str(path)
    reporter = Reporter(SourceLines())
    pre = Preprocessor(reporter, include_dirs, defines)
    return _compile(lambda: pre.run_file(path), reporter, path)


def _compile(preprocess, reporter: Reporter, main_file: str) -> CompileResult:
    tracker = _Tracker(Location(main_file, 1, 1))
    with tracker.stage(reporter, "preprocessing"):
        source = preprocess()
    with tracker.stage(reporter, "parsing"):
        tokens = tokenize(source, reporter)
        program = parse(tokens, reporter, tracker)
    with tracker.stage(reporter, "checking"):
        checker = check(program, reporter, tracker)
    with tracker.stage(reporter, "generating BMv2 JSON for"):
        bmv2, ctx = lower_program(program, checker, reporter, main_file, tracker)
    ctx.line_order = {}
    for index, (_, file, line) in enumerate(source.lines):
        ctx.line_order.setdefault((file, line), index)
    if ctx.p4runtime_refusals:
        first = ctx.p4runtime_refusals[0]
        return CompileResult(bmv2, None, list(reporter.warnings),
                             reporter.error(first.node.loc, first.message))
    with tracker.stage(reporter, "generating P4Info for"):
        p4info = build_p4info(program, ctx, bmv2)
    return CompileResult(bmv2, p4info, list(reporter.warnings))


class _Tracker:
    """Remembers the construct being compiled, so that even a compiler bug is reported at a
    location in the user's program (as an 'internal error'), never as a bare traceback."""

    def __init__(self, where: Location):
        self.where = where

    def at(self, node) -> None:
        loc = getattr(node, "loc", None)
        if isinstance(loc, Location):
            self.where = loc

    @contextmanager
    def stage(self, reporter: Reporter, what: str):
        try:
            yield
        except CompileError:
            raise
        except RecursionError:
            raise reporter.error(self.where, "program nested too deeply") from None
        except StorageUnsupported as exc:   # a known limit of the layout, not a compiler bug
            raise reporter.error(self.where, str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - turned into a located diagnostic
            raise reporter.error(
                self.where, f"internal compiler error while {what} this construct "
                            f"({type(exc).__name__}: {exc}); it may be unsupported") from None


__all__ = ["compile_file", "compile_source", "CompileResult", "CompileError"]
