/* inaemu's core library for P4_16: the declarations every P4_16 program may use.
 * Written for inaemu; it declares the same API as the standard core.p4. */
#ifndef _INAEMU_CORE_P4_
#define _INAEMU_CORE_P4_
#define _CORE_P4_  /* as the standard core.p4: programs guard on it */

error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

extern packet_in {
    void extract<T>(out T hdr);
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    T lookahead<T>();
    void advance(in bit<32> sizeInBits);
    bit<32> length();
}

extern packet_out {
    void emit<T>(in T hdr);
}

extern void verify(in bool check, in error toSignal);

@noWarn("unused")
action NoAction() {}

match_kind {
    exact,
    ternary,
    lpm
}

extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif
