/* What the two halves of ragcli._speedups (_speedups.c, _speedups_json.c) call of each other. */

#ifndef RAGCLI_SPEEDUPS_H
#define RAGCLI_SPEEDUPS_H

#include <Python.h>

PyObject *ragcli_documents(PyObject *self, PyObject *args);   /* _speedups_json.c */
PyObject *ragcli_json_array(PyObject *self, PyObject *args);  /* _speedups_json.c */

#endif
