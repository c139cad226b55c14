/* The native core's module: the loop (eventloop.c), links (link.c) and switch ports
 * (switchports.c), built as one extension (inaemu/sim/native/__init__.py joins the files in
 * this order). */

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "MODULE_NAME", "the simulator's native core", -1, NULL,
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
    if (PyType_Ready(&LoopType) < 0 || link_module_init() < 0 || ports_module_init() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    if (add_type(m, "Loop", &LoopType) < 0 || add_type(m, "Link", &LinkType) < 0
            || add_type(m, "SwitchPorts", &PortsType) < 0
            || add_type(m, "Ingress", &IngressType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
