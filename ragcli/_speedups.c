/* ragcli._speedups: the per-record work of indexing a JSONL corpus, in C where Python is slowest.

   Optional: setup.py builds it where a C compiler is found; where it is not, each caller uses the
   Python it mirrors (tests/test_speedups.py holds the two to the same results):
   - normalised (ingest/passages.py): texts' whitespace collapsed, their accents composed;
   - plain_batch (ingest/records.py): a batch of plain JSONL records made into passages;
   - in_range (retrieval/schema.py): the writer's quick test for CJK;
   - documents, json_array (_speedups_json.c; retrieval/writer.py, ingest/jsonl.py): passages as tantivy's
     JSON documents, a read's lines as one JSON array.

   normalised(texts, composed) -> list: for each text, what passages.normalise_py gives:
     " ".join(t.split()) where t holds "  ", "\n", "\t" or "\r"; else t.strip();
     then composed(...) unless the text is known to be NFC already: a one-byte string (every
     character below U+0100 is NFC and composes with no other), or one whose characters are all in
     _nfc_safe.h's table (dashes, quotes, Greek, Cyrillic, CJK, Hangul syllables: most text).
   CPython 3.11's search for the two-character "  " scans ~2 ns a character (most of a corpus's
   whitespace test); the loop below scans a one-byte string at a fraction of that. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "_nfc_safe.h"
#include "_speedups.h"

static PyObject *TEXT, *TITLE, *PID;  /* a record's keys, interned once */

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
    return PyUnicode_FromObject(t);  /* t itself, or a str of a subclass's text (as strip() gives) */
}

/* Whether every character of t is one that a string known to be NFC can hold without a check
   (_nfc_safe.h, written by scripts/gen_nfc_table.py): then t is NFC. A one-byte string always is:
   every character below U+0100 is NFC and composes with no other. */
static int
nfc_as_is(PyObject *t)
{
    int kind = PyUnicode_KIND(t);
    if (kind == PyUnicode_1BYTE_KIND)
        return 1;
    if (kind != PyUnicode_2BYTE_KIND)
        return 0;  /* (beyond the Basic Multilingual Plane: asked of unicodedata) */
    const Py_UCS2 *s = PyUnicode_2BYTE_DATA(t);
    for (Py_ssize_t i = 0, n = PyUnicode_GET_LENGTH(t); i < n; i++) {
        Py_UCS2 c = s[i];
        if (c < 0x300)
            continue;
        unsigned char page = NFC_PAGE[c >> 8];
        if (page == 0 || (page > 1 && !(NFC_BITS[page - 2][(c & 0xFF) >> 3] & (1 << (c & 7)))))
            return 0;
    }
    return 1;
}

/* ``composed(t)`` unless t is known to be NFC (``nfc_as_is``). A new reference. */
static PyObject *
composed_unless_nfc(PyObject *t, PyObject *composed)
{
    if (nfc_as_is(t)) {
        Py_INCREF(t);
        return t;
    }
    return PyObject_CallOneArg(composed, t);
}

/* nfc_as_is(text): whether the C takes text for NFC without asking ``composed`` (for the tests). */
static PyObject *
nfc_as_is_py(PyObject *self, PyObject *t)
{
    if (!PyUnicode_Check(t)) {
        PyErr_SetString(PyExc_TypeError, "nfc_as_is: a str");
        return NULL;
    }
    return PyBool_FromLong(nfc_as_is(t));
}

/* One text as passages.normalise_py gives it (a new reference). */
static PyObject *
normalised_one(PyObject *t, PyObject *composed)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(t) < 0)  /* (a no-op, deprecated, from Python 3.12) */
        return NULL;
#endif
    PyObject *b = collapsed(t);
    if (b == NULL)
        return NULL;
    PyObject *c = composed_unless_nfc(b, composed);
    Py_DECREF(b);
    return c;
}

static PyObject *
normalised(PyObject *self, PyObject *args)
{
    PyObject *texts, *composed;
    if (!PyArg_ParseTuple(args, "O!O:normalised", &PyList_Type, &texts, &composed))
        return NULL;
    texts = PyList_AsTuple(texts);  /* held while ``composed`` runs: whatever it does, no item goes */
    if (texts == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(texts);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *t = PyTuple_GET_ITEM(texts, i);
        PyObject *b = NULL;
        if (!PyUnicode_Check(t))
            PyErr_Format(PyExc_TypeError, "normalised: item %zd is %.100s, not str", i, Py_TYPE(t)->tp_name);
        else
            b = normalised_one(t, composed);
        if (b == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, b);
    }
    Py_DECREF(texts);
    return out;
}

/* Whether a two- or four-byte string holds a character in [lo, hi], 64 at a time without a branch. */
#define HOLDS_RANGE(NAME, CHAR)                                                                     \
    static int NAME(const CHAR *s, Py_ssize_t n, Py_UCS4 lo, Py_UCS4 hi)                           \
    {                                                                                               \
        Py_ssize_t i = 0;                                                                           \
        for (; i + 64 <= n; i += 64) {                                                              \
            unsigned int hit = 0;                                                                   \
            for (Py_ssize_t j = i; j < i + 64; j++)                                                 \
                hit |= (unsigned int)((s[j] >= lo) & (s[j] <= hi));                                 \
            if (hit)                                                                                \
                return 1;                                                                           \
        }                                                                                           \
        for (; i < n; i++)                                                                          \
            if (s[i] >= lo && s[i] <= hi)                                                           \
                return 1;                                                                           \
        return 0;                                                                                   \
    }

HOLDS_RANGE(ucs2_holds, Py_UCS2)
HOLDS_RANGE(ucs4_holds, Py_UCS4)

/* in_range(lo, hi, text): whether text holds a character from lo to hi (code points); a one-byte string
   is known not to without a scan where lo is above U+00FF. What schema.maybe_cjk asks of every passage
   that is not ASCII (a regular expression scanned the Latin-1 ones too, at ~1.2 ns a character). */
static PyObject *
in_range(PyObject *self, PyObject *args)
{
    PyObject *t;
    unsigned int lo, hi;
    if (!PyArg_ParseTuple(args, "IIU:in_range", &lo, &hi, &t))
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(t);
    const void *data = PyUnicode_DATA(t);
    int found;
    switch (PyUnicode_KIND(t)) {
    case PyUnicode_1BYTE_KIND:
        found = 0;
        for (Py_ssize_t i = 0; lo <= 0xFF && i < n && !found; i++)
            found = ((const Py_UCS1 *)data)[i] >= lo && ((const Py_UCS1 *)data)[i] <= hi;
        break;
    case PyUnicode_2BYTE_KIND:
        found = lo <= 0xFFFF && ucs2_holds((const Py_UCS2 *)data, n, lo, hi);
        break;
    default:
        found = ucs4_holds((const Py_UCS4 *)data, n, lo, hi);
    }
    return PyBool_FromLong(found);
}

/* plain_batch(numbers, records, prefix, key, passage, long_chars, composed, record_title, record_pid, parts):
   records._plain_batch_py, the passages of a batch of plain JSONL records, a record at a time in C where
   Python takes a pass over the batch per column: None unless every record is a dict whose "text" is a
   str that is not blank once normalised. Each record's passage is passage(pid, title, body, key,
   prefix + str(number)): its title composed (record_title(record) unless a str), its pid as given
   (record_pid(record, title, body) unless a str that is not empty); a body of long_chars or more is
   handed to parts(pid, title, body, key, location), which gives the record's passages. */
static PyObject *
plain_batch(PyObject *self, PyObject *args)
{
    PyObject *numbers, *records, *prefix, *key, *passage, *composed, *record_title, *record_pid, *parts;
    Py_ssize_t long_chars;
    if (!PyArg_ParseTuple(args, "OO!UOO!nOOOO:plain_batch", &numbers, &PyList_Type, &records, &prefix, &key,
                          &PyType_Type, &passage, &long_chars, &composed, &record_title, &record_pid, &parts))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)passage, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "plain_batch: passage must be a tuple type");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(records);
    if (n == 0)
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        if (!PyDict_CheckExact(r))
            Py_RETURN_NONE;
        PyObject *text = PyDict_GetItemWithError(r, TEXT);
        if (text == NULL && PyErr_Occurred())
            return NULL;
        if (text == NULL || !PyUnicode_CheckExact(text))
            Py_RETURN_NONE;
    }
    /* the records held while the callbacks run (record_title, record_pid, parts, composed: Python) */
    PyObject *recs = PyList_AsTuple(records), *bodies = PyList_New(n), *out = NULL, *seq = NULL;
    if (recs == NULL || bodies == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *text = PyDict_GetItemWithError(PyTuple_GET_ITEM(recs, i), TEXT);
        if (text == NULL || !PyUnicode_CheckExact(text)) {  /* (a callback changed the record since) */
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "plain_batch: a record changed while it was read");
            goto fail;
        }
        PyObject *body = normalised_one(text, composed);
        if (body == NULL)
            goto fail;
        PyList_SET_ITEM(bodies, i, body);
        if (PyUnicode_GET_LENGTH(body) == 0) {  /* a blank record: the batch is read a record at a time */
            Py_DECREF(recs);
            Py_DECREF(bodies);
            Py_RETURN_NONE;
        }
    }
    seq = PySequence_Fast(numbers, "plain_batch: numbers must be a sequence");
    if (seq == NULL)
        goto fail;
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_SetString(PyExc_ValueError, "plain_batch: as many numbers as records");
        goto fail;
    }
    out = PyList_New(0);
    if (out == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyTuple_GET_ITEM(recs, i), *body = PyList_GET_ITEM(bodies, i);
        PyObject *title = PyDict_GetItemWithError(r, TITLE);
        if (title == NULL && PyErr_Occurred())
            goto fail;
        title = title != NULL && PyUnicode_CheckExact(title) ? composed_unless_nfc(title, composed)
                                                             : PyObject_CallOneArg(record_title, r);
        if (title == NULL)
            goto fail;
        PyObject *pid = PyDict_GetItemWithError(r, PID);
        if (pid == NULL && PyErr_Occurred()) {
            Py_DECREF(title);
            goto fail;
        }
        if (pid != NULL && PyUnicode_CheckExact(pid) && PyUnicode_GET_LENGTH(pid) > 0)
            Py_INCREF(pid);
        else
            pid = PyObject_CallFunctionObjArgs(record_pid, r, title, body, NULL);
        PyObject *number = pid ? PyObject_Str(PySequence_Fast_GET_ITEM(seq, i)) : NULL;
        PyObject *location = number ? PyUnicode_Concat(prefix, number) : NULL;
        Py_XDECREF(number);
        int ok = location != NULL;
        if (ok && PyUnicode_GET_LENGTH(body) >= long_chars) {
            PyObject *some = PyObject_CallFunctionObjArgs(parts, pid, title, body, key, location, NULL);
            ok = some != NULL && PyList_SetSlice(out, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, some) == 0;
            Py_XDECREF(some);
        } else if (ok) {
            /* tuple.__new__(passage, items): what the namedtuple's own __new__ does, without its Python frame */
            PyObject *items = PyTuple_Pack(5, pid, title, body, key, location);
            PyObject *with = items ? PyTuple_Pack(1, items) : NULL;
            PyObject *p = with ? PyTuple_Type.tp_new((PyTypeObject *)passage, with, NULL) : NULL;
            Py_XDECREF(with);
            Py_XDECREF(items);
            ok = p != NULL && PyList_Append(out, p) == 0;
            Py_XDECREF(p);
        }
        Py_XDECREF(location);
        Py_XDECREF(pid);
        Py_DECREF(title);
        if (!ok)
            goto fail;
    }
    Py_DECREF(seq);
    Py_DECREF(bodies);
    Py_DECREF(recs);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(seq);
    Py_XDECREF(bodies);
    Py_XDECREF(recs);
    return NULL;
}

static PyMethodDef methods[] = {
    {"documents", ragcli_documents, METH_VARARGS,
     "documents(passages, lo, hi): each passage as a tantivy JSON document, or None where one of its title "
     "and text holds a character from lo to hi, or a field a lone surrogate."},
    {"json_array", ragcli_json_array, METH_VARARGS,
     "json_array(parts, block, end): (b'[' + the lines of b''.join(parts) + block[:end] joined by ',' + b']', lines)."},
    {"nfc_as_is", nfc_as_is_py, METH_O, "nfc_as_is(text): whether text is known to be NFC without unicodedata."},
    {"in_range", in_range, METH_VARARGS, "in_range(lo, hi, text): whether text holds a character from lo to hi (code points)."},
    {"plain_batch", plain_batch, METH_VARARGS,
     "plain_batch(numbers, records, prefix, key, passage, long_chars, composed, record_title, record_pid, parts): "
     "the passages of a batch of plain JSONL records, or None (see records._plain_batch_py)."},
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
    TEXT = PyUnicode_InternFromString("text");
    TITLE = PyUnicode_InternFromString("title");
    PID = PyUnicode_InternFromString("pid");
    if (TEXT == NULL || TITLE == NULL || PID == NULL)
        return NULL;
    return PyModule_Create(&module);
}
