"""BMv2's runtime interface as Thrift declares it: its structs, error codes and services.

The one definition of the interface inaemu serves: BMv2's `standard.thrift`, `simple_pre_lag.thrift`
and `simple_switch.thrift` (field ids, types, method signatures and error codes, as BMv2 1.15
declares them), written as `binary.py` types. `service.py` implements the methods; nothing else
spells a field id. tests/thrift/ checks these declarations against the generated Python of a BMv2
installation where one is present.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from p4switch.thrift.binary import (Binary, Bool, Double, Field, Int16, Int32, Int64, ListOf,
                                    MapOf, Struct, Text)


def struct(name: str, *fields: tuple[int, str, object]) -> Struct:
    return Struct(name, tuple(Field(i, n, t) for i, n, t in fields))


def code_exception(name: str) -> Struct:
    """Every BMv2 runtime exception is one i32 `code` of its error enum."""
    return struct(name, (1, "code", Int32))


# ------------------------------------------------------------------------ error codes
class TableError(enum.IntEnum):
    TABLE_FULL = 1
    INVALID_HANDLE = 2
    EXPIRED_HANDLE = 3
    COUNTERS_DISABLED = 4
    METERS_DISABLED = 5
    AGEING_DISABLED = 6
    INVALID_TABLE_NAME = 7
    INVALID_ACTION_NAME = 8
    WRONG_TABLE_TYPE = 9
    INVALID_MBR_HANDLE = 10
    MBR_STILL_USED = 11
    MBR_ALREADY_IN_GRP = 12
    MBR_NOT_IN_GRP = 13
    INVALID_GRP_HANDLE = 14
    GRP_STILL_USED = 15
    EMPTY_GRP = 16
    DUPLICATE_ENTRY = 17
    BAD_MATCH_KEY = 18
    INVALID_METER_OPERATION = 19
    DEFAULT_ACTION_IS_CONST = 20
    DEFAULT_ENTRY_IS_CONST = 21
    NO_DEFAULT_ENTRY = 22
    INVALID_ACTION_PROFILE_NAME = 23
    NO_ACTION_PROFILE_SELECTION = 24
    IMMUTABLE_TABLE_ENTRIES = 25
    BAD_ACTION_DATA = 26
    NO_TABLE_KEY = 27
    ERROR = 100


class CounterError(enum.IntEnum):
    INVALID_COUNTER_NAME = 1
    INVALID_INDEX = 2
    ERROR = 3


class SwapError(enum.IntEnum):
    CONFIG_SWAP_DISABLED = 1
    ONGOING_SWAP = 2
    NO_ONGOING_SWAP = 3


class MeterError(enum.IntEnum):
    INVALID_METER_NAME = 1
    INVALID_INDEX = 2
    BAD_RATES_LIST = 3
    INVALID_INFO_RATE_VALUE = 4
    INVALID_BURST_SIZE_VALUE = 5
    ERROR = 6


class RegisterError(enum.IntEnum):
    INVALID_REGISTER_NAME = 1
    INVALID_INDEX = 2
    ERROR = 3


class ParseVSetError(enum.IntEnum):
    INVALID_PARSE_VSET_NAME = 1
    ERROR = 2


class LearnError(enum.IntEnum):
    INVALID_LIST_ID = 1
    INVALID_LIST_NAME = 2
    ERROR = 3


class DevMgrError(enum.IntEnum):
    ERROR = 1


class CrcError(enum.IntEnum):
    INVALID_CALCULATION_NAME = 1
    WRONG_TYPE_CALCULATION = 2
    INVALID_CONFIG = 3


class ToeplitzError(enum.IntEnum):
    INVALID_CALCULATION_NAME = 1
    WRONG_TYPE_CALCULATION = 2
    INVALID_KEY = 3


class IdLookupError(enum.IntEnum):
    INVALID_RESOURCE_TYPE = 0
    INVALID_RESOURCE_NAME = 1


class McError(enum.IntEnum):
    TABLE_FULL = 1
    INVALID_MGID = 2
    INVALID_MGRP_HANDLE = 3
    INVALID_L1_HANDLE = 4
    ERROR = 5


class MirroringError(enum.IntEnum):
    SESSION_NOT_FOUND = 1


class MatchParamType(enum.IntEnum):
    EXACT = 0
    LPM = 1
    TERNARY = 2
    VALID = 3
    RANGE = 4


class ActionEntryType(enum.IntEnum):
    NONE = 0
    ACTION_DATA = 1
    MBR_HANDLE = 2
    GRP_HANDLE = 3


class ResourceType(enum.IntEnum):
    MATCH_TABLE = 0
    ACTION_PROFILE = 1
    COUNTER = 2
    METER = 3
    REGISTER = 4
    LEARNING_LIST = 5


# ---------------------------------------------------------------------------- structs
MatchParamExact = struct("BmMatchParamExact", (1, "key", Binary))
MatchParamLPM = struct("BmMatchParamLPM", (1, "key", Binary), (2, "prefix_length", Int32))
MatchParamTernary = struct("BmMatchParamTernary", (1, "key", Binary), (2, "mask", Binary))
MatchParamValid = struct("BmMatchParamValid", (1, "key", Bool))
MatchParamRange = struct("BmMatchParamRange", (1, "start", Binary), (2, "end_", Binary))
MatchParam = struct("BmMatchParam", (1, "type", Int32), (2, "exact", MatchParamExact),
                    (3, "lpm", MatchParamLPM), (4, "ternary", MatchParamTernary),
                    (5, "valid", MatchParamValid), (6, "range", MatchParamRange))
AddEntryOptions = struct("BmAddEntryOptions", (1, "priority", Int32))
CounterValue = struct("BmCounterValue", (1, "bytes", Int64), (2, "packets", Int64))
MeterRateConfig = struct("BmMeterRateConfig", (1, "units_per_micros", Double),
                         (2, "burst_size", Int32))
DevMgrPortInfo = struct("DevMgrPortInfo", (1, "port_num", Int32), (2, "iface_name", Text),
                        (3, "is_up", Bool), (4, "extra", MapOf(Text, Text)))
Crc16Config = struct("BmCrc16Config", (1, "polynomial", Int16), (2, "initial_remainder", Int16),
                     (3, "final_xor_value", Int16), (4, "data_reflected", Bool),
                     (5, "remainder_reflected", Bool))
Crc32Config = struct("BmCrc32Config", (1, "polynomial", Int32), (2, "initial_remainder", Int32),
                     (3, "final_xor_value", Int32), (4, "data_reflected", Bool),
                     (5, "remainder_reflected", Bool))
ActionEntry = struct("BmActionEntry", (1, "action_type", Int32), (2, "action_name", Text),
                     (3, "action_data", ListOf(Binary)), (4, "mbr_handle", Int32),
                     (5, "grp_handle", Int32))
MtEntryLife = struct("BmMtEntryLife", (1, "timeout_ms", Int32), (2, "time_since_hit_ms", Int32))
MtEntry = struct("BmMtEntry", (1, "match_key", ListOf(MatchParam)),
                 (2, "options", AddEntryOptions), (3, "entry_handle", Int32),
                 (4, "action_entry", ActionEntry), (5, "life", MtEntryLife))
ActProfMember = struct("BmMtActProfMember", (1, "mbr_handle", Int32), (2, "action_name", Text),
                       (3, "action_data", ListOf(Binary)))
ActProfGroup = struct("BmMtActProfGroup", (1, "grp_handle", Int32),
                      (2, "mbr_handles", ListOf(Int32)))
SwitchConfig = struct("BmConfig", (1, "device_id", Int64), (2, "thrift_port", Int32),
                      (3, "notifications_socket", Text), (4, "elogger_socket", Text),
                      (5, "debugger_socket", Text))
MirroringSessionConfig = struct("MirroringSessionConfig", (1, "port", Int32), (2, "mgid", Int32))

InvalidTableOperation = code_exception("InvalidTableOperation")
InvalidCounterOperation = code_exception("InvalidCounterOperation")
InvalidSwapOperation = code_exception("InvalidSwapOperation")
InvalidMeterOperation = code_exception("InvalidMeterOperation")
InvalidRegisterOperation = code_exception("InvalidRegisterOperation")
InvalidParseVSetOperation = code_exception("InvalidParseVSetOperation")
InvalidLearnOperation = code_exception("InvalidLearnOperation")
InvalidDevMgrOperation = code_exception("InvalidDevMgrOperation")
InvalidCrcOperation = code_exception("InvalidCrcOperation")
InvalidToeplitzHashOperation = code_exception("InvalidToeplitzHashOperation")
InvalidIdLookup = code_exception("InvalidIdLookup")
InvalidMcOperation = code_exception("InvalidMcOperation")
InvalidMirroringOperation = code_exception("InvalidMirroringOperation")

# which error enum each exception's code belongs to
ERROR_ENUMS = {
    InvalidTableOperation: TableError, InvalidCounterOperation: CounterError,
    InvalidSwapOperation: SwapError, InvalidMeterOperation: MeterError,
    InvalidRegisterOperation: RegisterError, InvalidParseVSetOperation: ParseVSetError,
    InvalidLearnOperation: LearnError, InvalidDevMgrOperation: DevMgrError,
    InvalidCrcOperation: CrcError, InvalidToeplitzHashOperation: ToeplitzError,
    InvalidIdLookup: IdLookupError, InvalidMcOperation: McError,
    InvalidMirroringOperation: MirroringError,
}


# ---------------------------------------------------------------------------- methods
@dataclass(frozen=True)
class Method:
    """One call: its arguments, its result (None: void) and the exception it may raise."""

    name: str
    args: Struct
    result: object | None
    raises: Struct | None

    def result_struct(self) -> Struct:
        """The reply's struct: field 0 the result, field 1 the declared exception."""
        fields = []
        if self.result is not None:
            fields.append(Field(0, "success", self.result))
        if self.raises is not None:
            fields.append(Field(1, "ouch", self.raises))
        return Struct(self.name + "_result", tuple(fields))


def method(name: str, args: tuple = (), result=None, raises: Struct | None = None) -> Method:
    return Method(name, struct(name + "_args", *((i + 1, n, t) for i, (n, t) in
                                                  enumerate(args))), result, raises)


CXT = ("cxt_id", Int32)
TABLE = ("table_name", Text)
KEY = ("match_key", ListOf(MatchParam))
DATA = ("action_data", ListOf(Binary))
OPTIONS = ("options", AddEntryOptions)
HANDLE = ("entry_handle", Int32)
PROF = ("act_prof_name", Text)
MBR = ("mbr_handle", Int32)
GRP = ("grp_handle", Int32)
RATES = ("rates", ListOf(MeterRateConfig))
T = InvalidTableOperation

STANDARD = (
    method("bm_mt_get_num_entries", (CXT, TABLE), Int64, T),
    method("bm_mt_clear_entries", (CXT, TABLE, ("reset_default_entry", Bool)), None, T),
    method("bm_mt_add_entry", (CXT, TABLE, KEY, ("action_name", Text), DATA, OPTIONS), Int32, T),
    method("bm_mt_set_default_action", (CXT, TABLE, ("action_name", Text), DATA), None, T),
    method("bm_mt_reset_default_entry", (CXT, TABLE), None, T),
    method("bm_mt_delete_entry", (CXT, TABLE, HANDLE), None, T),
    method("bm_mt_modify_entry", (CXT, TABLE, HANDLE, ("action_name", Text), DATA), None, T),
    method("bm_mt_set_entry_ttl", (CXT, TABLE, HANDLE, ("timeout_ms", Int32)), None, T),
    method("bm_mt_act_prof_add_member", (CXT, PROF, ("action_name", Text), DATA), Int32, T),
    method("bm_mt_act_prof_delete_member", (CXT, PROF, MBR), None, T),
    method("bm_mt_act_prof_modify_member", (CXT, PROF, MBR, ("action_name", Text), DATA), None,
           T),
    method("bm_mt_act_prof_create_group", (CXT, PROF), Int32, T),
    method("bm_mt_act_prof_delete_group", (CXT, PROF, GRP), None, T),
    method("bm_mt_act_prof_add_member_to_group", (CXT, PROF, MBR, GRP), None, T),
    method("bm_mt_act_prof_remove_member_from_group", (CXT, PROF, MBR, GRP), None, T),
    method("bm_mt_act_prof_get_members", (CXT, PROF), ListOf(ActProfMember), T),
    method("bm_mt_act_prof_get_member", (CXT, PROF, MBR), ActProfMember, T),
    method("bm_mt_act_prof_get_groups", (CXT, PROF), ListOf(ActProfGroup), T),
    method("bm_mt_act_prof_get_group", (CXT, PROF, GRP), ActProfGroup, T),
    method("bm_mt_indirect_add_entry", (CXT, TABLE, KEY, MBR, OPTIONS), Int32, T),
    method("bm_mt_indirect_modify_entry", (CXT, TABLE, HANDLE, MBR), None, T),
    method("bm_mt_indirect_delete_entry", (CXT, TABLE, HANDLE), None, T),
    method("bm_mt_indirect_set_entry_ttl", (CXT, TABLE, HANDLE, ("timeout_ms", Int32)), None, T),
    method("bm_mt_indirect_set_default_member", (CXT, TABLE, MBR), None, T),
    method("bm_mt_indirect_reset_default_entry", (CXT, TABLE), None, T),
    method("bm_mt_indirect_ws_add_entry", (CXT, TABLE, KEY, GRP, OPTIONS), Int32, T),
    method("bm_mt_indirect_ws_modify_entry", (CXT, TABLE, HANDLE, GRP), None, T),
    method("bm_mt_indirect_ws_set_default_group", (CXT, TABLE, GRP), None, T),
    method("bm_mt_read_counter", (CXT, TABLE, HANDLE), CounterValue, T),
    method("bm_mt_reset_counters", (CXT, TABLE), None, T),
    method("bm_mt_write_counter", (CXT, TABLE, HANDLE, ("value", CounterValue)), None, T),
    method("bm_mt_set_meter_rates", (CXT, TABLE, HANDLE, RATES), None, T),
    method("bm_mt_get_meter_rates", (CXT, TABLE, HANDLE), ListOf(MeterRateConfig), T),
    method("bm_mt_get_entries", (CXT, TABLE), ListOf(MtEntry), T),
    method("bm_mt_get_entry", (CXT, TABLE, HANDLE), MtEntry, T),
    method("bm_mt_get_default_entry", (CXT, TABLE), ActionEntry, T),
    method("bm_mt_get_entry_from_key", (CXT, TABLE, KEY, OPTIONS), MtEntry, T),
    method("bm_counter_read", (CXT, ("counter_name", Text), ("index", Int32)), CounterValue,
           InvalidCounterOperation),
    method("bm_counter_reset_all", (CXT, ("counter_name", Text)), None,
           InvalidCounterOperation),
    method("bm_counter_write", (CXT, ("counter_name", Text), ("index", Int32),
                                ("value", CounterValue)), None, InvalidCounterOperation),
    method("bm_learning_ack", (CXT, ("list_id", Int32), ("buffer_id", Int64),
                               ("sample_ids", ListOf(Int32))), None, InvalidLearnOperation),
    method("bm_learning_ack_buffer", (CXT, ("list_id", Int32), ("buffer_id", Int64)), None,
           InvalidLearnOperation),
    method("bm_learning_set_timeout", (CXT, ("list_id", Int32), ("timeout_ms", Int32)), None,
           InvalidLearnOperation),
    method("bm_learning_set_buffer_size", (CXT, ("list_id", Int32), ("nb_samples", Int32)),
           None, InvalidLearnOperation),
    method("bm_load_new_config", (("config_str", Text),), None, InvalidSwapOperation),
    method("bm_swap_configs", (), None, InvalidSwapOperation),
    method("bm_meter_array_set_rates", (CXT, ("meter_array_name", Text), RATES), None,
           InvalidMeterOperation),
    method("bm_meter_set_rates", (CXT, ("meter_array_name", Text), ("index", Int32), RATES),
           None, InvalidMeterOperation),
    method("bm_meter_get_rates", (CXT, ("meter_array_name", Text), ("index", Int32)),
           ListOf(MeterRateConfig), InvalidMeterOperation),
    method("bm_register_read", (CXT, ("register_array_name", Text), ("idx", Int32)), Int64,
           InvalidRegisterOperation),
    method("bm_register_read_all", (CXT, ("register_array_name", Text)), ListOf(Int64),
           InvalidRegisterOperation),
    method("bm_register_write", (CXT, ("register_array_name", Text), ("index", Int32),
                                 ("value", Int64)), None, InvalidRegisterOperation),
    method("bm_register_write_range", (CXT, ("register_array_name", Text),
                                       ("start_index", Int32), ("end_index", Int32),
                                       ("value", Int64)), None, InvalidRegisterOperation),
    method("bm_register_reset", (CXT, ("register_array_name", Text)), None,
           InvalidRegisterOperation),
    method("bm_parse_vset_add", (CXT, ("parse_vset_name", Text), ("value", Binary)), None,
           InvalidParseVSetOperation),
    method("bm_parse_vset_remove", (CXT, ("parse_vset_name", Text), ("value", Binary)), None,
           InvalidParseVSetOperation),
    method("bm_parse_vset_get", (CXT, ("parse_vset_name", Text)), ListOf(Binary),
           InvalidParseVSetOperation),
    method("bm_parse_vset_clear", (CXT, ("parse_vset_name", Text)), None,
           InvalidParseVSetOperation),
    method("bm_dev_mgr_add_port", (("iface_name", Text), ("port_num", Int32),
                                   ("pcap_path", Text)), None, InvalidDevMgrOperation),
    method("bm_dev_mgr_remove_port", (("port_num", Int32),), None, InvalidDevMgrOperation),
    method("bm_dev_mgr_show_ports", (), ListOf(DevMgrPortInfo), InvalidDevMgrOperation),
    method("bm_mgmt_get_info", (), SwitchConfig),
    method("bm_set_crc16_custom_parameters", (CXT, ("calc_name", Text),
                                              ("crc16_config", Crc16Config)), None,
           InvalidCrcOperation),
    method("bm_set_crc32_custom_parameters", (CXT, ("calc_name", Text),
                                              ("crc32_config", Crc32Config)), None,
           InvalidCrcOperation),
    method("bm_set_toeplitz_hash_key", (CXT, ("calc_name", Text), ("key", Binary)), None,
           InvalidToeplitzHashOperation),
    method("bm_reset_state"),
    method("bm_get_config", (), Text),
    method("bm_get_config_md5", (), Binary),
    method("bm_get_id_from_name", (CXT, ("resource_type", Int32), ("resource_name", Text)),
           Int32, InvalidIdLookup),
    method("bm_serialize_state", (), Text),
)

M = InvalidMcOperation
SIMPLE_PRE_LAG = (
    method("bm_mc_mgrp_create", (CXT, ("mgrp", Int32)), Int32, M),
    method("bm_mc_mgrp_destroy", (CXT, ("mgrp_handle", Int32)), None, M),
    method("bm_mc_node_create", (CXT, ("rid", Int32), ("port_map", Text), ("lag_map", Text)),
           Int32, M),
    method("bm_mc_node_associate", (CXT, ("mgrp_handle", Int32), ("l1_handle", Int32)), None, M),
    method("bm_mc_node_dissociate", (CXT, ("mgrp_handle", Int32), ("l1_handle", Int32)), None,
           M),
    method("bm_mc_node_destroy", (CXT, ("l1_handle", Int32)), None, M),
    method("bm_mc_node_update", (CXT, ("l1_handle", Int32), ("port_map", Text),
                                 ("lag_map", Text)), None, M),
    method("bm_mc_set_lag_membership", (CXT, ("lag_index", Int16), ("port_map", Text)), None,
           M),
    method("bm_mc_get_entries", (CXT,), Text, M),
)

SIMPLE_SWITCH = (
    method("mirroring_mapping_add", (("mirror_id", Int32), ("egress_port", Int32)), Int32),
    method("mirroring_mapping_delete", (("mirror_id", Int32),), Int32),
    method("mirroring_mapping_get_egress_port", (("mirror_id", Int32),), Int32),
    method("mirroring_session_add", (("mirror_id", Int32), ("config", MirroringSessionConfig)),
           None, InvalidMirroringOperation),
    method("mirroring_session_delete", (("mirror_id", Int32),), None, InvalidMirroringOperation),
    method("mirroring_session_get", (("mirror_id", Int32),), MirroringSessionConfig,
           InvalidMirroringOperation),
    method("set_egress_queue_depth", (("port_num", Int32), ("depth_pkts", Int32)), Int32),
    method("set_all_egress_queue_depths", (("depth_pkts", Int32),), Int32),
    method("set_egress_queue_rate", (("port_num", Int32), ("rate_pps", Int64)), Int32),
    method("set_all_egress_queue_rates", (("rate_pps", Int64),), Int32),
    method("set_egress_priority_queue_depth", (("port_num", Int32), ("priority", Int32),
                                               ("depth_pkts", Int32)), Int32),
    method("set_egress_priority_queue_rate", (("port_num", Int32), ("priority", Int32),
                                              ("rate_pps", Int64)), Int32),
    method("get_time_elapsed_us", (), Int64),
    method("get_time_since_epoch_us", (), Int64),
)

# the services BMv2's simple_switch registers with its multiplexed processor, by name
SERVICES: dict[str, dict[str, Method]] = {
    "standard": {m.name: m for m in STANDARD},
    "simple_pre_lag": {m.name: m for m in SIMPLE_PRE_LAG},
    "simple_switch": {m.name: m for m in SIMPLE_SWITCH},
}

APPLICATION_EXCEPTION = struct("TApplicationException", (1, "message", Text), (2, "type", Int32))


class ApplicationErrorType(enum.IntEnum):
    """TApplicationException's types (Thrift's own, not BMv2's)."""

    UNKNOWN = 0
    UNKNOWN_METHOD = 1
    INVALID_MESSAGE_TYPE = 2
    WRONG_METHOD_NAME = 3
    BAD_SEQUENCE_ID = 4
    MISSING_RESULT = 5
    INTERNAL_ERROR = 6
    PROTOCOL_ERROR = 7
