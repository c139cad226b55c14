-- Wireshark / tshark dissector for inaemu's aggregation packets (docs/protocol.md §1).
--
-- GENERATED from hosts/ina_header.py (the header's one definition): do not edit. Change the
-- header there and regenerate: `python -m inaemu.trace.wireshark > scripts/wireshark/ina.lua`
-- (tests/trace/test_wireshark_lua.py checks this file is the generator's output).
--
--   tshark -X lua_script:scripts/wireshark/ina.lua -r s1-eth1_in.pcap -V
--   tshark -X lua_script:scripts/wireshark/ina.lua -r s1-eth1_in.pcap -Y 'ina.retx == 1' \
--          -T fields -e frame.time_relative -e ina.kind -e ina.worker -e ina.slot -e ina.chunk
--
-- Or copy it into Wireshark's personal plugins folder. UDP port 48879 (either direction)
-- dissects as INA; k (values per packet) follows from the UDP payload length.

local ina = Proto("ina", "inaemu in-network aggregation")

local kinds = { [0] = "CONTRIB", [1] = "RESULT", [2] = "MAX_CONTRIB", [3] = "MAX_RESULT",
                [4] = "QUERY", [5] = "NACK" }
local formats = { [0] = "int32", [1] = "int16", [2] = "int8", [3] = "invalid" }

local f = ina.fields
f.kind = ProtoField.uint8("ina.kind", "Kind", base.DEC, kinds)
f.flags = ProtoField.uint8("ina.flags", "Flags", base.HEX)
f.ver = ProtoField.uint8("ina.ver", "Version", base.DEC, nil, 0x01)
f.retx = ProtoField.uint8("ina.retx", "Retransmission", base.DEC, nil, 0x02)
f.format = ProtoField.uint8("ina.format", "Lane format", base.DEC, formats, 0x0C)
f.overflow = ProtoField.uint8("ina.overflow", "Overflow", base.DEC, nil, 0x10)
f.next = ProtoField.uint8("ina.next", "Next use claimed", base.DEC, nil, 0x20)
f.job = ProtoField.uint16("ina.job", "Job", base.DEC)
f.worker = ProtoField.uint8("ina.worker", "Worker", base.DEC)
f.pad = ProtoField.uint8("ina.pad", "Padding", base.HEX)
f.slot = ProtoField.uint16("ina.slot", "Slot", base.DEC)
f.chunk = ProtoField.uint32("ina.chunk", "Chunk", base.DEC)
f.count = ProtoField.uint16("ina.count", "Count", base.DEC)
f.bmax = ProtoField.uint16("ina.bmax", "Block max (bfloat16)", base.HEX)
f.k = ProtoField.uint16("ina.k", "Values (k)", base.DEC)
f.value = ProtoField.int32("ina.value", "Value", base.DEC)

local HEADER = 16
local LANE = 4

function ina.dissector(buffer, pinfo, tree)
    if buffer:len() < HEADER then return 0 end
    pinfo.cols.protocol = "INA"
    local k = math.floor((buffer:len() - HEADER) / LANE)
    local subtree = tree:add(ina, buffer(0, HEADER + LANE * k))
    subtree:add(f.kind, buffer(0, 1))
    local flags = subtree:add(f.flags, buffer(1, 1))
    flags:add(f.ver, buffer(1, 1))
    flags:add(f.retx, buffer(1, 1))
    flags:add(f.format, buffer(1, 1))
    flags:add(f.overflow, buffer(1, 1))
    flags:add(f.next, buffer(1, 1))
    subtree:add(f.job, buffer(2, 2))
    subtree:add(f.worker, buffer(4, 1))
    subtree:add(f.pad, buffer(5, 1))
    subtree:add(f.slot, buffer(6, 2))
    subtree:add(f.chunk, buffer(8, 4))
    subtree:add(f.count, buffer(12, 2))
    subtree:add(f.bmax, buffer(14, 2))
    subtree:add(f.k, k):set_generated()
    if k > 0 then                 -- QUERY and NACK are the header alone
        local values = subtree:add(buffer(HEADER, LANE * k),
                                   string.format("Values (%d)", k))
        for i = 0, k - 1 do
            values:add(f.value, buffer(HEADER + LANE * i, LANE))
        end
    end
    local kind = buffer(0, 1):uint()
    local ver = buffer(1, 1):bitfield(7, 1)
    local retx = buffer(1, 1):bitfield(6, 1) == 1
    pinfo.cols.info = string.format("%s job=%d worker=%d slot=%d v%d chunk=%d%s",
        kinds[kind] or ("kind " .. kind), buffer(2, 2):uint(), buffer(4, 1):uint(),
        buffer(6, 2):uint(), ver, buffer(8, 4):uint(),
        retx and " retx" or "")
    return HEADER + LANE * k
end

DissectorTable.get("udp.port"):add(48879, ina)
