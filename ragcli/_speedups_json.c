/* ragcli._speedups, its JSON half: passages as the JSON documents tantivy's IndexWriter.add_json parses
   (documents), and a JSONL read's complete lines as one JSON array for orjson (json_array). The module
   itself, and what it is for, is in _speedups.c. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "_speedups.h"

static const char *DOC_FIELDS[5] = {"pid", "title", "text", "path", "location"};  /* a Passage's, in order */

/* How many characters the JSON string of t takes without its quotes (-1: t holds a lone surrogate, no
   JSON tantivy reads; 0 or more otherwise), and, in *hit, whether it holds a character in [lo, hi]:
   one typed loop a kind, without a branch for the common character. */
#define JSON_LENGTH(NAME, CHAR, WIDE)                                                               \
    static Py_ssize_t NAME(const CHAR *s, Py_ssize_t n, Py_UCS4 lo, Py_UCS4 hi, int *hit, int *controls) \
    {                                                                                               \
        Py_ssize_t extra = 0;                                                                       \
        int odd = 0;                                                                                \
        for (Py_ssize_t i = 0; i < n; i++) {                                                        \
            CHAR c = s[i];                                                                          \
            odd |= (c < 0x20) | (c == '"') | (c == '\\') | (WIDE && ((c >= lo) & (c <= hi)))         \
                   | (WIDE && (((Py_UCS4)c >= 0xD800) & ((Py_UCS4)c <= 0xDFFF)));                                   \
        }                                                                                           \
        if (!odd)                                                                                   \
            return n;                                                                               \
        for (Py_ssize_t i = 0; i < n; i++) {                                                        \
            CHAR c = s[i];                                                                          \
            if (c < 0x20) {                                                                         \
                extra += (c == '\n' || c == '\t' || c == '\r' || c == '\b' || c == '\f') ? 1 : 5;    \
                *controls = 1;                                                                      \
            }                                                                                       \
            else if (c == '"' || c == '\\')                                                          \
                extra += 1;                                                                         \
            else if (WIDE && (Py_UCS4)c >= 0xD800 && (Py_UCS4)c <= 0xDFFF)                                      \
                return -1;                                                                          \
            else if (WIDE && c >= lo && c <= hi)                                                    \
                *hit = 1;                                                                           \
        }                                                                                           \
        return n + extra;                                                                           \
    }

JSON_LENGTH(json_length1, Py_UCS1, 0)
JSON_LENGTH(json_length2, Py_UCS2, 1)
JSON_LENGTH(json_length4, Py_UCS4, 1)

static Py_ssize_t
json_length(PyObject *t, Py_UCS4 lo, Py_UCS4 hi, int *hit, int *controls)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(t);
    switch (PyUnicode_KIND(t)) {
    case PyUnicode_1BYTE_KIND:  /* (Latin-1: no CJK and no surrogate in it; lo is above U+00FF) */
        return json_length1(PyUnicode_1BYTE_DATA(t), n, lo, hi, hit, controls);
    case PyUnicode_2BYTE_KIND:
        return json_length2(PyUnicode_2BYTE_DATA(t), n, lo, hi, hit, controls);
    default:
        return json_length4(PyUnicode_4BYTE_DATA(t), n, lo, hi, hit, controls);
    }
}

/* Where the next character of s[from:n] that JSON escapes is (n if none), a typed loop a kind. */
#define NEXT_ESCAPE(NAME, CHAR)                                                                     \
    static Py_ssize_t NAME(const CHAR *s, Py_ssize_t from, Py_ssize_t n)                            \
    {                                                                                               \
        for (Py_ssize_t i = from; i < n; i++)                                                       \
            if (s[i] < 0x20 || s[i] == '"' || s[i] == '\\')                                          \
                return i;                                                                           \
        return n;                                                                                   \
    }

NEXT_ESCAPE(next_escape1, Py_UCS1)
NEXT_ESCAPE(next_escape2, Py_UCS2)
NEXT_ESCAPE(next_escape4, Py_UCS4)

/* next_escape1 where s holds no control character: memchr for the quote and the backslash, each looked
   for again only once passed (``seen``: where each is, n if none is left; -1 not yet looked for). */
static Py_ssize_t
next_quote_or_backslash(const Py_UCS1 *s, Py_ssize_t from, Py_ssize_t n, Py_ssize_t seen[2])
{
    static const int marks[2] = {'"', '\\'};
    for (int k = 0; k < 2; k++) {
        if (seen[k] != n && seen[k] < from) {
            const Py_UCS1 *at = memchr(s + from, marks[k], (size_t)(n - from));
            seen[k] = at ? at - s : n;
        }
    }
    return seen[0] < seen[1] ? seen[0] : seen[1];
}

static Py_ssize_t
next_escape(int kind, const void *data, Py_ssize_t from, Py_ssize_t n)
{
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        return next_escape1((const Py_UCS1 *)data, from, n);
    case PyUnicode_2BYTE_KIND:
        return next_escape2((const Py_UCS2 *)data, from, n);
    default:
        return next_escape4((const Py_UCS4 *)data, from, n);
    }
}

/* Write t as a JSON string (quotes included) into out at *at: the runs between characters to escape
   copied whole (PyUnicode_CopyCharacters, a memcpy where the kinds agree). */
static void
json_write(PyObject *out, Py_ssize_t *at, PyObject *t, int clean, int controls)
{
    static const char hex[] = "0123456789abcdef";
    int okind = PyUnicode_KIND(out), kind = PyUnicode_KIND(t);
    void *odata = PyUnicode_DATA(out);
    const void *data = PyUnicode_DATA(t);
    Py_ssize_t w = *at, n = PyUnicode_GET_LENGTH(t), run = 0;
    PyUnicode_WRITE(okind, odata, w++, '"');
    if (clean) {  /* nothing to escape (json_length said): one copy */
        PyUnicode_CopyCharacters(out, w, t, 0, n);
        w += n;
        run = n;
    }
    Py_ssize_t seen[2] = {-1, -1};
    int marks_only = kind == PyUnicode_1BYTE_KIND && !controls;
    while (run < n) {
        Py_ssize_t i = marks_only ? next_quote_or_backslash((const Py_UCS1 *)data, run, n, seen)
                                  : next_escape(kind, data, run, n);
        if (i > run) {  /* (cannot fail: out is new, and its maximum character is t's or more) */
            PyUnicode_CopyCharacters(out, w, t, run, i - run);
            w += i - run;
        }
        run = i + 1;
        if (i == n)
            break;
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        PyUnicode_WRITE(okind, odata, w++, '\\');
        switch (c) {
        case '"': case '\\': PyUnicode_WRITE(okind, odata, w++, c); break;
        case '\n': PyUnicode_WRITE(okind, odata, w++, 'n'); break;
        case '\t': PyUnicode_WRITE(okind, odata, w++, 't'); break;
        case '\r': PyUnicode_WRITE(okind, odata, w++, 'r'); break;
        case '\b': PyUnicode_WRITE(okind, odata, w++, 'b'); break;
        case '\f': PyUnicode_WRITE(okind, odata, w++, 'f'); break;
        default:
            PyUnicode_WRITE(okind, odata, w++, 'u');
            PyUnicode_WRITE(okind, odata, w++, '0');
            PyUnicode_WRITE(okind, odata, w++, '0');
            PyUnicode_WRITE(okind, odata, w++, hex[c >> 4]);
            PyUnicode_WRITE(okind, odata, w++, hex[c & 15]);
        }
    }
    PyUnicode_WRITE(okind, odata, w++, '"');
    *at = w;
}

/* One passage as a tantivy JSON document (a new reference), or None (a new reference to it) where the
   writer must make it itself: a title or text holds a character in [lo, hi] (it may need CJK terms), a
   field holds a lone surrogate or is not exactly a str; NULL on an error. */
static PyObject *
passage_json(PyObject *p, Py_UCS4 lo, Py_UCS4 hi)
{
    if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 5)
        Py_RETURN_NONE;  /* (what the writer makes of it, it says) */
    Py_ssize_t size = 1;  /* "{" ... "}": each field '"name":' and its string, commas between */
    Py_UCS4 maxchar = 127;
    int hit = 0, clean[5], controls[5] = {0, 0, 0, 0, 0};
    for (int k = 0; k < 5; k++) {
        PyObject *t = PyTuple_GET_ITEM(p, k);
        if (!PyUnicode_CheckExact(t))  /* a str subclass (a PDF library's title): the writer's own way */
            Py_RETURN_NONE;
        Py_ssize_t n = json_length(t, lo, hi, &hit, &controls[k]);
        clean[k] = n == PyUnicode_GET_LENGTH(t);
        if (n < 0 || (hit && (k == 1 || k == 2)))  /* (the writer looks for CJK in the title and text) */
            Py_RETURN_NONE;
        hit = 0;
        size += (Py_ssize_t)strlen(DOC_FIELDS[k]) + 3 + n + 2 + 1;
        if (PyUnicode_MAX_CHAR_VALUE(t) > maxchar)
            maxchar = PyUnicode_MAX_CHAR_VALUE(t);
    }
    PyObject *out = PyUnicode_New(size, maxchar);
    if (out == NULL)
        return NULL;
    int okind = PyUnicode_KIND(out);
    void *odata = PyUnicode_DATA(out);
    Py_ssize_t w = 0;
    PyUnicode_WRITE(okind, odata, w++, '{');
    for (int k = 0; k < 5; k++) {
        if (k)
            PyUnicode_WRITE(okind, odata, w++, ',');
        PyUnicode_WRITE(okind, odata, w++, '"');
        for (const char *c = DOC_FIELDS[k]; *c; c++)
            PyUnicode_WRITE(okind, odata, w++, (Py_UCS4)*c);
        PyUnicode_WRITE(okind, odata, w++, '"');
        PyUnicode_WRITE(okind, odata, w++, ':');
        json_write(out, &w, PyTuple_GET_ITEM(p, k), clean[k], controls[k]);
    }
    PyUnicode_WRITE(okind, odata, w++, '}');
    assert(w == size);
    return out;
}

/* documents(passages, lo, hi) -> list: each passage (pid, title, text, path, location) as the JSON
   object tantivy's ``IndexWriter.add_json`` parses, or None where the writer makes that one itself
   (``passage_json``). tantivy reads a JSON string with less work than a ``Document`` built from
   keyword arguments (each value copied into a map and then into tantivy's document): the main
   thread's time handing corpus_dev's passages over was 40 ms that way, 24 with the JSON. */
PyObject *
ragcli_documents(PyObject *self, PyObject *args)
{
    PyObject *passages;
    unsigned int lo, hi;
    if (!PyArg_ParseTuple(args, "O!II:documents", &PyList_Type, &passages, &lo, &hi))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(passages);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *doc = passage_json(PyList_GET_ITEM(passages, i), lo, hi);
        if (doc == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, doc);
    }
    return out;
}

/* json_array(parts, block, end) -> (bytes, lines): the complete lines of a JSONL read, parts (the start
   of its first line, from reads before) and block[:end] (end: where its last "\n" is), as one JSON
   array, "[" + the lines joined by "," + "]", and how many lines there are: one pass over the bytes,
   where Python cut them into a bytes object a line and joined those again (~5 ms of corpus_dev's
   indexing). A line's "\r" before its "\n" stays: JSON's whitespace. */
PyObject *
ragcli_json_array(PyObject *self, PyObject *args)
{
    PyObject *parts;
    Py_buffer block;
    Py_ssize_t end;
    if (!PyArg_ParseTuple(args, "O!y*n:json_array", &PyList_Type, &parts, &block, &end))
        return NULL;
    PyObject *out = NULL;
    if (end < 0 || end > block.len) {
        PyErr_SetString(PyExc_ValueError, "json_array: end outside the block");
        goto done;
    }
    Py_ssize_t size = end + 2, nparts = PyList_GET_SIZE(parts);
    for (Py_ssize_t i = 0; i < nparts; i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        if (!PyBytes_Check(part)) {
            PyErr_SetString(PyExc_TypeError, "json_array: parts must be bytes");
            goto done;
        }
        size += PyBytes_GET_SIZE(part);
    }
    PyObject *joined = PyBytes_FromStringAndSize(NULL, size);
    if (joined == NULL)
        goto done;
    char *w = PyBytes_AS_STRING(joined);
    Py_ssize_t lines = 1;
    *w++ = '[';
    for (Py_ssize_t i = 0; i <= nparts; i++) {
        const char *r = i < nparts ? PyBytes_AS_STRING(PyList_GET_ITEM(parts, i)) : (const char *)block.buf;
        Py_ssize_t n = i < nparts ? PyBytes_GET_SIZE(PyList_GET_ITEM(parts, i)) : end;
        const char *stop = r + n;
        while (r < stop) {  /* memchr to each line end, memcpy up to it */
            const char *nl = memchr(r, '\n', (size_t)(stop - r));
            Py_ssize_t k = (nl ? nl : stop) - r;
            memcpy(w, r, (size_t)k);
            w += k;
            r += k;
            if (nl) {
                *w++ = ',';
                r++;
                lines++;
            }
        }
    }
    *w = ']';
    out = Py_BuildValue("(Nn)", joined, lines);
done:
    PyBuffer_Release(&block);
    return out;
}
