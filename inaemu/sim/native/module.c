/* The native core's module: the loop (eventloop.c), host timers (hosttimer.c), links
 * (link.c), switch ports (switchports.c), host framing (frames.c) and host interfaces
 * (hostport.c), built as one extension (inaemu/sim/native/__init__.py joins the files in this order). */

/* how many frames and payloads were written into bytes objects let go of (eventloop.c's
 * spare bytes): the tests' proof that it happens */
static PyObject *Spare_reused(PyObject *unused, PyObject *noargs) {
    return PyLong_FromLongLong(spare_reused);
}

static PyMethodDef module_functions[] = {
    {"parse", (PyCFunction)Frames_parse, METH_O, "frames.parse: a frame's Datagram or None"},
    {"udp_frame", (PyCFunction)(void (*)(void))Frames_udp, METH_FASTCALL,
     "udp_frame(gateway_mac, mac, src_ip, dst_ip, sport, dport, payload, ident)"},
    {"tcp_frame", (PyCFunction)(void (*)(void))Frames_tcp, METH_FASTCALL,
     "tcp_frame(gateway_mac, mac, src_ip, dst_ip, sport, dport, seq, ack, flags, options, "
     "payload, ident, window)"},
    {"attr_get", (PyCFunction)(void (*)(void))Attrs_get, METH_FASTCALL,
     "attr_get(obj, name): obj.name as the C parts read it (attrs.c)"},
    {"attr_set", (PyCFunction)(void (*)(void))Attrs_set, METH_FASTCALL,
     "attr_set(obj, name, value): obj.name = value as the C parts write it (attrs.c)"},
    {"attr_set_number", (PyCFunction)(void (*)(void))Attrs_set_number, METH_FASTCALL,
     "attr_set_number(obj, name, value, add=False): an int or float field written as the C "
     "parts write their counters and times, in place when only the field holds it (attrs.c)"},
    {"attr_get_number", (PyCFunction)(void (*)(void))Attrs_get_number, METH_FASTCALL,
     "attr_get_number(obj, name, as_float): the field read as the C parts read a counter "
     "(a long long) or a time (a double) (attrs.c)"},
    {"int_compare", (PyCFunction)(void (*)(void))Attrs_int_compare, METH_FASTCALL,
     "int_compare(a, b, op): a op b (op 0-5: <, <=, ==, !=, >, >=) as the C parts compare "
     "chunk numbers (attrs.c)"},
    {"attr_misses", (PyCFunction)Attrs_misses, METH_NOARGS,
     "attr_misses(): field accesses that took the generic path so far (attrs.c)"},
    {"spare_reused", (PyCFunction)Spare_reused, METH_NOARGS,
     "spare_reused(): frames and payloads written into bytes objects let go of so far "
     "(eventloop.c's spare bytes)"},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "MODULE_NAME", "the simulator's native core", -1, module_functions,
};

static int add_type(PyObject *module, const char *name, PyTypeObject *type) {
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit_MODULE_NAME(void) {
    str_action = PyUnicode_InternFromString("action");
    str_args = PyUnicode_InternFromString("args");
    str_done = PyUnicode_InternFromString("done");
    str_idle = PyUnicode_InternFromString("idle");
    str_limit = PyUnicode_InternFromString("time limit");
    if (ina_module_init() < 0) return NULL;     /* the INA worker's path (inaworker.c) */
    if (PyType_Ready(&LoopType) < 0 || host_timer_module_init() < 0 || link_module_init() < 0
            || ports_module_init() < 0
            || frames_module_init() < 0 || host_module_init() < 0)
        return NULL;
    if (ring_path_module_init() < 0 || PyType_Ready(&JobLanesType) < 0
            || PyType_Ready(&TimerHeapType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    /* the switches' deparsers build into the spare bytes too (p4switch's use_frame_source) */
    PyObject *source = PyCapsule_New((void *)bytes_of_size, "p4switch.frame_source", NULL);
    if (source == NULL || PyModule_AddObject(m, "frame_source", source) < 0) {
        Py_XDECREF(source);
        Py_DECREF(m);
        return NULL;
    }
    if (add_type(m, "InaFastPath", &InaFastType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#ifndef Py_GIL_DISABLED
    if (PyType_Ready(&SwitchLockType) < 0 || add_type(m, "SwitchLock", &SwitchLockType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#endif
    if (add_type(m, "Loop", &LoopType) < 0 || add_type(m, "Timer", &HostTimerType) < 0
            || add_type(m, "Link", &LinkType) < 0
            || add_type(m, "SwitchPorts", &PortsType) < 0
            || add_type(m, "Ingress", &IngressType) < 0
            || add_type(m, "HostPort", &HostPortType) < 0
            || add_type(m, "HostCounts", &HostCountsType) < 0
            || add_type(m, "JobLanes", &JobLanesType) < 0
            || add_type(m, "TimerHeap", &TimerHeapType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* which numbers attrs.c writes in place in this build (floats, ints): for its tests */
    if (PyModule_AddObject(m, "numbers_in_place",
                           Py_BuildValue("(OO)", NUMBERS_IN_PLACE ? Py_True : Py_False,
                                         LONG_IN_PLACE ? Py_True : Py_False)) < 0
            || add_type(m, "RingPath", &RingPathType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
