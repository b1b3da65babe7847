"""Apple iWork files — Pages (.pages), Numbers (.numbers), Keynote (.key) — as Sections, with the standard
library only. iWork '13 and later: a zip of .iwa files holding protobuf messages (``iwa`` reads them);
the text is in TSWP.StorageArchive messages (its field 3) and a table's strings in TST.TableDataList
ones. Read without Apple's schema: the few field numbers used here come from the message definitions
dumped from the apps (psobot/keynote-parser's protos). Pages: the document's text, then its text boxes,
headers, footnotes and table cells, in one section; Keynote: a section per slide ("Deck > Slide title",
cited "slide 3"), with its notes; Numbers: the strings of each table ("Workbook > Sheet > Table") and the
text boxes. Numbers' numeric cells (kept as numbers in the table's tiles), styles and formulas are not
read. iWork '09: a zip of XML (index.xml, index.apxl) whose paragraphs (sf:p) and cell strings are read.
Where neither gives text, the QuickLook/Preview.pdf older files carry is read as a PDF. ``reader`` calls
``iwork_sections``."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

from ragcli.ingest.formats import Section, SkipFile
from ragcli.ingest.iwa import MAX_BYTES, Damaged, IwaObject, document_objects, field, fields_of, reference, repeated
from ragcli.ingest.snappy import SnappyError
from ragcli.ingest.zipxml import parsed, read_capped, skips

_KINDS = {"pages": "Pages", "numbers": "Numbers", "key": "Keynote"}
_STORAGE = {2001, 2005}  # TSWP.StorageArchive (2005: as some versions number it)
_DATA_LIST, _TABLE_INFO, _TABLE_MODEL = 6005, 6000, 6001  # TST.TableDataList, .TableInfoArchive, .TableModelArchive
_KN_SHOW, _KN_SLIDE_NODE, _KN_SLIDE, _KN_PLACEHOLDER = 2, 4, 5, 7  # in a Keynote deck
_TN_SHEET = 2  # TN.SheetArchive, in a Numbers workbook
_NOTE, _CELL = 4, 5  # StorageArchive.kind: a slide's presenter notes, a table cell's text
_OBJECT = re.compile("[\ufffc\u200b\ufeff\x00-\x08\x0b-\x1f]")  # an attachment's place (a table, an image), controls
_SF = "{http://developer.apple.com/namespaces/sf}"
_SFA = "{http://developer.apple.com/namespaces/sfa}"
_KEY = "{http://developer.apple.com/namespaces/keynote2}"


def iwork_sections(path: Path, data: bytes) -> list[Section]:
    """The sections of a .pages, .numbers or .key file whose bytes are ``data``; SkipFile if it is not one,
    is protected by a password, or holds no text."""
    kind = path.suffix.lower()[1:]
    name = _KINDS.get(kind, "iWork")
    if not data.startswith(b"PK"):
        if kind == "key":
            pem = b"-----BEGIN" in data[:4096]
            raise SkipFile("not a Keynote deck (" + ("a PEM key or certificate" if pem else "no zip: a cryptographic "
                                                     "key, perhaps") + ")")
        raise SkipFile(f"not a {name} file (not the zip it should be)")
    with skips(name, f"not a {name} file (a damaged zip)"), zipfile.ZipFile(io.BytesIO(data)) as z:
        names = z.namelist()
        if any(n.lower().endswith(".iwph") for n in names) or any(
                i.compress_type not in (0, 8, 12, 14) for i in z.infolist()):
            raise SkipFile(f"{name} file protected by a password")  # (iWork's own encryption: no zip method)
        root = _package_root(names)
        if root is None:
            if kind == "key":
                raise SkipFile("not a Keynote deck (a zip without a Keynote document in it)")
            raise SkipFile(f"not a {name} file (a zip without an iWork document in it)")
        sections: list[Section] = []
        damage = ""
        try:
            sections = _iwa_sections(z, root, kind, path.stem) or _xml_sections(z, root, kind, path.stem)
        except (Damaged, SnappyError) as exc:
            damage = str(exc) or "cut short"
        except SyntaxError as exc:  # ElementTree's ParseError: iWork '09's XML
            damage = f"its XML is damaged ({exc})"
        except (zipfile.BadZipFile, KeyError, EOFError, NotImplementedError, OSError, RuntimeError) as exc:
            damage = f"a damaged part ({type(exc).__name__})"
        if sections:
            return sections
        preview = next((n for n in names if n[len(root):] in ("QuickLook/Preview.pdf", "preview.pdf")), None)
        if preview is not None:
            return _pdf_sections(read_capped(z, preview, MAX_BYTES), path.stem)
    if damage:
        raise SkipFile(f"damaged {name} file: {damage}")
    raise SkipFile(f"no text found in this {name} file (a Keynote deck of images, an empty document?)")


def _package_root(names: list[str]) -> str | None:
    """The folder in the zip that holds the document ("" or "Deck.key/", a package zipped with its folder),
    or None where there is none (nor a preview of one)."""
    for n in names:
        for part in ("Index.zip", "Index/Document.iwa", "index.xml", "index.xml.gz", "index.apxl", "index.apxl.gz",
                     "QuickLook/Preview.pdf"):
            if n.endswith(part) and n[:-len(part)].count("/") <= 1 and (n == part or n[-len(part) - 1] == "/"):
                return n[:-len(part)]
    return None


# --- iWork '13 and later --------------------------------------------------------------------------------------

def _text(obj: IwaObject) -> tuple[int, str]:
    """(kind, text) of a StorageArchive: its text strings joined, without attachments' marks; (0, "") where
    it is damaged."""
    try:
        fields = fields_of(obj.payload)
    except Damaged:
        return 0, ""
    text = "".join(v.decode("utf-8", "replace") for v in repeated(fields, 3) if isinstance(v, bytes))
    text = _OBJECT.sub("", text.replace("\u2028", "\n").replace("\u2029", "\n"))
    kind = field(fields, 1, 0)
    return (kind if isinstance(kind, int) else 0), "\n".join(line.strip() for line in text.splitlines() if line.strip())


def _strings(obj: IwaObject) -> list[str]:
    """The strings of a TableDataList of strings (listType 1), by key: the order they were first typed;
    those before the damage where it is damaged."""
    try:
        fields = fields_of(obj.payload)
    except Damaged:
        return []
    if field(fields, 1) != 1:
        return []
    entries = []
    for entry in repeated(fields, 3):
        try:
            e = fields_of(entry) if isinstance(entry, bytes) else []
        except Damaged:
            break
        s = field(e, 3)
        if isinstance(s, bytes) and s.strip():
            key = field(e, 1, 0)
            entries.append((key if isinstance(key, int) else 0, s.decode("utf-8", "replace").strip()))
    return [s for _, s in sorted(entries)]


def _iwa_sections(z: zipfile.ZipFile, root: str, kind: str, stem: str) -> list[Section]:
    names = z.namelist()
    if root + "Index.zip" not in names and not any(n.startswith(root + "Index/") for n in names):
        return []
    objects, damage = document_objects(z, root)
    if kind == "key":
        sections = _keynote(objects, stem)
    elif kind == "numbers":
        sections = _numbers(objects, stem)
    else:
        texts = [t for o in objects.values() if o.type in _STORAGE and o.file != "DocumentStylesheet.iwa"
                 for k, t in [_text(o)] if t]
        cells = [s for o in objects.values() if o.type == _DATA_LIST for s in _strings(o)]
        body = "\n\n".join(texts + (["\n".join(cells)] if cells else []))
        sections = [Section(stem, body)] if body.strip() else []
    if damage and not sections:  # (where some text was read, the rest of a damaged file is let go)
        raise Damaged(damage)
    return sections


def _keynote(objects: dict[int, IwaObject], deck: str) -> list[Section]:
    """A section per slide, in the show's order, titled by its title placeholder's text."""
    slides = _slide_order(objects)
    sections = []
    for number, slide_id in enumerate(slides, start=1):
        slide = objects[slide_id]
        fields = fields_of(slide.payload)
        title_storage = _placeholder_storage(objects, reference(fields, 5))
        title = _text(objects[title_storage])[1] if title_storage in objects else ""
        said, notes = [], []
        if title:
            said.append(title)
        for ident, o in objects.items():
            if o.file != slide.file or o.type not in _STORAGE or ident == title_storage:
                continue
            k, t = _text(o)
            if t:
                (notes if k == _NOTE else said).append(t)
        if notes:
            said.append("Notes: " + "\n\n".join(notes))
        if said:
            heading = " ".join(title.split())
            sections.append(Section(f"{deck} > {heading}" if heading else deck, "\n\n".join(said),
                                    part=f"slide {number}"))
    return sections


def _slide_order(objects: dict[int, IwaObject]) -> list[int]:
    """The slides' identifiers in the show's order (ShowArchive.slideTree.slides → SlideNode.slide); where
    no show says it, those of the files named Slide*.iwa in the zip's order."""
    order = []
    show = next((o for o in objects.values() if o.type == _KN_SHOW and o.file == "Document.iwa"), None)
    if show is not None:
        tree = field(fields_of(show.payload), 3)
        for node in repeated(fields_of(tree), 2) if isinstance(tree, bytes) else []:
            node_id = field(fields_of(node), 1) if isinstance(node, bytes) else None
            node_obj = objects.get(node_id)
            if node_obj is not None and node_obj.type == _KN_SLIDE_NODE:
                slide_id = reference(fields_of(node_obj.payload), 2)
                if slide_id in objects and objects[slide_id].type == _KN_SLIDE and slide_id not in order:
                    order.append(slide_id)
    if order:
        return order
    return [i for i, o in objects.items() if o.type == _KN_SLIDE and o.file.startswith("Slide")]


def _placeholder_storage(objects: dict[int, IwaObject], placeholder: int | None) -> int | None:
    """The StorageArchive a placeholder's shape owns (PlaceholderArchive.super → ShapeInfo.owned_storage)."""
    obj = objects.get(placeholder)
    if obj is None or obj.type != _KN_PLACEHOLDER:
        return None
    shape = field(fields_of(obj.payload), 1)
    if not isinstance(shape, bytes):
        return None
    shape_fields = fields_of(shape)
    return reference(shape_fields, 4) or reference(shape_fields, 2)


def _numbers(objects: dict[int, IwaObject], workbook: str) -> list[Section]:
    """A section per table ("Workbook > Sheet > Table": its strings), then one of the text boxes."""
    sections, seen = [], set()
    for sheet in [o for o in objects.values() if o.type == _TN_SHEET and o.file == "Document.iwa"]:
        fields = fields_of(sheet.payload)
        sheet_name = field(fields, 1)
        sheet_name = sheet_name.decode("utf-8", "replace").strip() if isinstance(sheet_name, bytes) else ""
        for ref in repeated(fields, 2):
            info = objects.get(field(fields_of(ref), 1) if isinstance(ref, bytes) else None)
            if info is None or info.type != _TABLE_INFO:
                continue
            model = objects.get(reference(fields_of(info.payload), 2))
            if model is None or model.type != _TABLE_MODEL:
                continue
            model_fields = fields_of(model.payload)
            table_name = field(model_fields, 8)
            table_name = table_name.decode("utf-8", "replace").strip() if isinstance(table_name, bytes) else ""
            store = field(model_fields, 4)
            strings_id = reference(fields_of(store), 4) if isinstance(store, bytes) else None
            strings = objects.get(strings_id)
            seen.add(strings_id)
            cells = _strings(strings) if strings is not None and strings.type == _DATA_LIST else []
            if cells:
                title = " > ".join(p for p in (workbook, sheet_name, table_name) if p)
                sections.append(Section(title, "\n".join(cells)))
    loose = [s for i, o in objects.items() if o.type == _DATA_LIST and i not in seen for s in _strings(o)]
    texts = [t for o in objects.values() if o.type in _STORAGE and o.file != "DocumentStylesheet.iwa"
             for k, t in [_text(o)] if t]
    if texts or loose:
        sections.append(Section(workbook, "\n\n".join(texts + (["\n".join(loose)] if loose else []))))
    return sections


# --- iWork '09, and the preview --------------------------------------------------------------------------------

def _xml_sections(z: zipfile.ZipFile, root: str, kind: str, stem: str) -> list[Section]:
    import gzip

    names = z.namelist()
    part = next((root + p for p in ("index.apxl", "index.xml", "index.apxl.gz", "index.xml.gz")
                 if root + p in names), None)
    if part is None:
        return []
    data = read_capped(z, part, MAX_BYTES)
    if part.endswith(".gz"):
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            data = fh.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise SkipFile(f"its {part} unzips to more than {MAX_BYTES >> 20} MB")
    tree = parsed(data, part)
    if kind == "key":
        sections = []
        for number, slide in enumerate(tree.iter(_KEY + "slide"), start=1):
            title_el = next(slide.iter(_KEY + "title-placeholder"), None)
            title = " ".join(_paragraphs(title_el)) if title_el is not None else ""
            said = [p for p in _paragraphs(slide)]
            notes = next(slide.iter(_KEY + "notes"), None)
            noted = _paragraphs(notes) if notes is not None else []
            said = [p for p in said if p not in noted] + (["Notes: " + "\n".join(noted)] if noted else [])
            if said:
                sections.append(Section(f"{stem} > {' '.join(title.split())}" if title.strip() else stem,
                                        "\n\n".join(said), part=f"slide {number}"))
        return sections
    said = _paragraphs(tree)
    body = "\n\n".join(said)
    return [Section(stem, body)] if body.strip() else []


_NOT_TEXT = {"section-prototypes", "prototype", "stylesheet", "styles", "ghost-text", "master-slides",
             "master-slide", "theme-list", "metadata"}  # templates, placeholder text, styles


def _paragraphs(el) -> list[str]:
    """The text of each sf:p under ``el`` and each table cell's string (sf:ct sfa:s="…"), in document
    order, a table's name (sf:tabular-model sf:name) before its cells; none in a template, a style or a
    master slide."""
    out = []
    stack = [el]
    while stack:
        node = stack.pop()
        local = node.tag.rpartition("}")[2] if isinstance(node.tag, str) else ""
        if local in _NOT_TEXT:
            continue
        if node.tag == _SF + "p":
            text = _OBJECT.sub("", " ".join("".join(node.itertext()).split()))
        elif node.tag == _SF + "ct":
            text = " ".join((node.get(_SFA + "s") or "").split())
        elif node.tag == _SF + "tabular-model":
            text = " ".join((node.get(_SF + "name") or "").split())
            text = "" if text == "Unnamed Table" else text  # (what Numbers '09 names a table no one named)
        else:
            text = ""
        if text:
            out.append(text)
        if node.tag != _SF + "p":
            stack.extend(reversed(list(node)))
    return out


def _pdf_sections(data: bytes, stem: str) -> list[Section]:
    """The sections of the document's QuickLook/Preview.pdf, read as a PDF file named after the document."""
    import tempfile

    from ragcli.ingest.pdf import pdf_sections

    with tempfile.TemporaryDirectory() as folder:
        pdf = Path(folder) / f"{stem or 'preview'}.pdf"
        pdf.write_bytes(data)
        return list(pdf_sections(pdf))
