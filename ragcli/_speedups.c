/* ragcli._speedups: the per-record work of indexing a JSONL corpus, in C where Python is slowest.

   Optional: setup.py builds it where a C compiler is found, and ragcli/ingest/passages.py falls back
   to the Python it mirrors where it is not (tests/test_speedups.py checks the two give the same).

   normalised(texts, composed) -> list: for each text, what passages.normalise_py gives:
     " ".join(t.split()) where t holds "  ", "\n", "\t" or "\r"; else t.strip();
     then composed(...) unless the text is known to be NFC already: every character below U+0100
     (CPython's one-byte strings) is NFC and composes with no other (no Latin-1 character is a
     combining mark), so only wider strings are handed to ``composed``.
   CPython 3.11's search for the two-character "  " scans ~2 ns a character (most of a corpus's
   whitespace test); the loop below scans a one-byte string at a fraction of that. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* Whether a string of one kind (one, two or four bytes a character) holds "  ", "\n", "\t" or "\r":
   64 characters at a time without a branch (the compiler vectorises the inner loop), stopping at the
   first block that holds one. */
#define NEEDS_COLLAPSE(NAME, CHAR)                                                                  \
    static int NAME(const CHAR *s, Py_ssize_t n)                                                    \
    {                                                                                               \
        Py_ssize_t i = 0;                                                                           \
        while (i + 65 <= n) {                                                                       \
            unsigned int hit = 0;                                                                   \
            for (Py_ssize_t j = i; j < i + 64; j++) {                                               \
                CHAR c = s[j], d = s[j + 1];                                                        \
                hit |= (unsigned int)((c == ' ') & (d == ' ')) | (c == '\n') | (c == '\t') | (c == '\r'); \
            }                                                                                       \
            if (hit)                                                                                \
                return 1;                                                                           \
            i += 64;                                                                                \
        }                                                                                           \
        for (; i < n; i++) {                                                                        \
            CHAR c = s[i];                                                                          \
            if (c == '\n' || c == '\t' || c == '\r' || (c == ' ' && i + 1 < n && s[i + 1] == ' ')) \
                return 1;                                                                           \
        }                                                                                           \
        return 0;                                                                                   \
    }

NEEDS_COLLAPSE(ucs1_needs_collapse, Py_UCS1)
NEEDS_COLLAPSE(ucs2_needs_collapse, Py_UCS2)
NEEDS_COLLAPSE(ucs4_needs_collapse, Py_UCS4)

static int
any_needs_collapse(PyObject *t)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(t);
    const void *data = PyUnicode_DATA(t);
    switch (PyUnicode_KIND(t)) {
    case PyUnicode_1BYTE_KIND:
        return ucs1_needs_collapse((const Py_UCS1 *)data, n);
    case PyUnicode_2BYTE_KIND:
        return ucs2_needs_collapse((const Py_UCS2 *)data, n);
    default:
        return ucs4_needs_collapse((const Py_UCS4 *)data, n);
    }
}

/* t collapsed or stripped (a new reference), as normalise_py does before composing. */
static PyObject *
collapsed(PyObject *t)
{
    if (any_needs_collapse(t)) {
        PyObject *words = PyUnicode_Split(t, NULL, -1);
        if (words == NULL)
            return NULL;
        PyObject *space = PyUnicode_FromOrdinal(' ');
        PyObject *joined = space ? PyUnicode_Join(space, words) : NULL;
        Py_XDECREF(space);
        Py_DECREF(words);
        return joined;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(t);
    if (n && (Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(t, 0)) || Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(t, n - 1))))
        return PyObject_CallMethod(t, "strip", NULL);
    Py_INCREF(t);
    return t;
}

static PyObject *
normalised(PyObject *self, PyObject *args)
{
    PyObject *texts, *composed;
    if (!PyArg_ParseTuple(args, "O!O:normalised", &PyList_Type, &texts, &composed))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(texts);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(texts, i);
        if (!PyUnicode_Check(t)) {
            PyErr_Format(PyExc_TypeError, "normalised: item %zd is %.100s, not str", i, Py_TYPE(t)->tp_name);
            Py_DECREF(out);
            return NULL;
        }
        if (PyUnicode_READY(t) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        PyObject *b = collapsed(t);
        if (b != NULL && PyUnicode_KIND(b) != PyUnicode_1BYTE_KIND) {
            PyObject *c = PyObject_CallOneArg(composed, b);
            Py_DECREF(b);
            b = c;
        }
        if (b == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, b);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"normalised", normalised, METH_VARARGS,
     "normalised(texts, composed): each text's whitespace collapsed and its accents composed (see passages.normalised)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "ragcli._speedups", "The per-record work of indexing, in C (optional).", -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&module);
}
