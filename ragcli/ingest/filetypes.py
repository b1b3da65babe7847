"""Which files ragcli reads and as what: the suffixes of each format, the files that are text by their
name (README, LICENSE, changelog.Debian), what a compressed file holds by its name (notes.md.gz:
Markdown), the types a folder's walk counts as not read, and the version of each format's reader an
index records. Paths only: no file is opened here (``formats`` and the readers read them)."""

from __future__ import annotations

from pathlib import Path

# plain text, and markup read as text: AsciiDoc and wiki pages too (a project's docs written so were not read)
TEXT_SUFFIXES = {".txt", ".text", ".rst", ".org", ".log", ".adoc", ".asciidoc", ".wiki", ".mediawiki"}
LATEX_SUFFIXES = {".tex", ".ltx"}  # LaTeX sources: by their sections, without markup (``ingest.latex``)
CSV_SUFFIXES = {".csv", ".tsv"}  # tables: read row by row under their column names (``spreadsheet.csv_sections``)
# and MDX (Markdown with JSX), Quarto and R Markdown notebooks: Markdown with code chunks
MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx", ".qmd", ".rmd"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
PDF_SUFFIXES = {".pdf"}
OFFICE_SUFFIXES = {".docx", ".odt", ".pptx", ".odp"}  # Word, OpenDocument text, PowerPoint, Impress (``office``)
# Excel workbooks (``ingest.spreadsheet``); .xlsm is the same format with macros
SPREADSHEET_SUFFIXES = {".xlsx", ".xlsm"}
XLS_SUFFIXES = {".xls"}  # Excel 97-2003's binary workbooks, an OLE file (``ingest.xls``), read as .xlsx ones are
PPT_SUFFIXES = {".ppt"}  # PowerPoint 97-2003's binary decks, an OLE file (``ingest.ppt``), read as .pptx ones are
ODS_SUFFIXES = {".ods"}  # OpenDocument spreadsheets (``ingest.ods``), read as Excel's are
EPUB_SUFFIXES = {".epub"}  # e-books (``ingest.epub``)
RTF_SUFFIXES = {".rtf"}  # what WordPad and TextEdit save (``ingest.rtf``)
MAIL_SUFFIXES = {".eml", ".emlx"}  # a message saved as a file (``ingest.mail``); .emlx: Apple Mail's
OUTLOOK_SUFFIXES = {".msg"}  # Outlook's own saved message, an OLE file (``ingest.outlook``)
MBOX_SUFFIXES = {".mbox"}  # mailboxes, many messages (``ingest.mail``): streamed, as JSONL corpora are
WORD97_SUFFIXES = {".doc"}  # Word 97-2003's binary format, an OLE file (``ingest.worddoc``)
NOTEBOOK_SUFFIXES = {".ipynb"}  # Jupyter notebooks (``ingest.notebook``)
IWORK_SUFFIXES = {".pages", ".numbers", ".key"}  # Apple Pages, Numbers, Keynote (``ingest.iwork``); a .key no deck is skipped
# A suffix other files share: a folder's walk reads one only where it starts with these bytes (a Keynote
# deck is a zip; a TLS or SSH key, no document, is counted among the files not read). Named, any is tried.
WALK_MAGIC = {".key": b"PK"}
SUBTITLE_SUFFIXES = {".srt", ".vtt"}  # transcripts and captions, cited by time (``ingest.subtitles``)
# Source code and configuration, read as text. A repository's files of a language not listed were left out
# of its index without a word (a Haskell, Elixir or Terraform project lost most of its own files). Not style
# sheets, nor C compilers' ".d" dependency files: a documentation build's themes, a build folder's lists.
CODE_SUFFIXES = {
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".vue", ".svelte", ".go", ".rs", ".java", ".kt",
    ".kts", ".groovy", ".gradle", ".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".cs", ".fs", ".fsx", ".m", ".mm",
    ".rb", ".php", ".swift", ".scala", ".dart", ".zig", ".nim", ".hs", ".ml", ".mli", ".ex", ".exs", ".erl",
    ".hrl", ".clj", ".cljs", ".el", ".lisp", ".scm", ".rkt", ".pl", ".pm", ".sh", ".bash", ".zsh", ".fish", ".ps1",
    ".psm1", ".bat", ".cmd", ".sql", ".r", ".jl", ".lua", ".f90", ".f", ".pas", ".sol", ".v", ".sv", ".vhd", ".asm",
    ".proto", ".graphql", ".gql", ".tf", ".hcl", ".nix", ".cmake", ".toml", ".yaml", ".yml", ".ini", ".cfg",
    ".conf", ".properties",
}
JSONL_SUFFIXES = {".jsonl"}
# A .json file is read only where named (a folder's are settings and data): as a corpus where it is a JSON
# array of {"title", "text"} records, else as text
JSON_SUFFIXES = {".json"}
SUPPORTED_SUFFIXES = (TEXT_SUFFIXES | LATEX_SUFFIXES | CSV_SUFFIXES | MARKDOWN_SUFFIXES | HTML_SUFFIXES
                      | PDF_SUFFIXES | OFFICE_SUFFIXES | SPREADSHEET_SUFFIXES | ODS_SUFFIXES | EPUB_SUFFIXES
                      | RTF_SUFFIXES | WORD97_SUFFIXES | XLS_SUFFIXES | PPT_SUFFIXES | MAIL_SUFFIXES
                      | OUTLOOK_SUFFIXES | MBOX_SUFFIXES | NOTEBOOK_SUFFIXES | SUBTITLE_SUFFIXES | CODE_SUFFIXES
                      | JSONL_SUFFIXES | IWORK_SUFFIXES)
# Read as they stream, a batch of passages at a time: no size cap, never whole in memory nor in a parser process
STREAMED_SUFFIXES = JSONL_SUFFIXES | MBOX_SUFFIXES
# Files without an extension that are text by their name (any case): a project's or a package's own
# documents and build files, read as plain text, and so are those names with a variant after a dot
# (README.Debian, changelog.amd64: most of /usr/share/doc). Other files without an extension are not
# read in a folder's walk (executables, data); named on the command line, any file is.
TEXT_NAMES = frozenset("""readme license licence copying notice authors contributors maintainers thanks changelog
    changes news history install todo bugs hacking contributing copyright makefile dockerfile""".split())


# A compressed file is read as what it holds (``ingest.compressed``): notes.md.gz as Markdown,
# corpus.jsonl.gz as a corpus (streamed), changelog.gz and NEWS.bz2 as text. PDF and Word files are
# compressed already: never read so.
COMPRESSED_SUFFIXES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
# zips and PDFs: compressed already
NOT_READ_COMPRESSED_SUFFIXES = (PDF_SUFFIXES | OFFICE_SUFFIXES | SPREADSHEET_SUFFIXES | ODS_SUFFIXES | EPUB_SUFFIXES
                                | WORD97_SUFFIXES | XLS_SUFFIXES | PPT_SUFFIXES | OUTLOOK_SUFFIXES
                                | IWORK_SUFFIXES)
READ_COMPRESSED_SUFFIXES = SUPPORTED_SUFFIXES - NOT_READ_COMPRESSED_SUFFIXES


def compression(path: Path) -> str | None:
    """"gzip", "bzip2" or "xz" for a file compressed so (by its name), else None."""
    return COMPRESSED_SUFFIXES.get(path.suffix.lower())


def inner(path: Path) -> Path:
    """The name of what a compressed file holds (notes.md.gz: notes.md); any other file's own."""
    return path.with_suffix("") if compression(path) else path


def format_suffix(path: Path) -> str:
    """The suffix that says how a file is read: its own, or what it holds once decompressed."""
    return inner(path).suffix.lower()


def type_of(path: Path) -> str:
    """A file's type as the walk's "not read" line names it: ".png", ".tar.gz", "" for none."""
    suffix = path.suffix.lower()
    if suffix in COMPRESSED_SUFFIXES and inner(path).suffix:
        return inner(path).suffix.lower() + suffix
    return suffix


# Not text, whatever the name before them: "history.db" and "install.exe" are no documents
_NOT_TEXT_SUFFIXES = frozenset(""".exe .dll .so .dylib .bin .dat .db .sqlite .sqlite3 .png .jpg .jpeg .gif .bmp .ico
    .webp .zip .tar .tgz .7z .rar .zst .class .jar .pyc .o .a .obj .iso .img .mp3 .mp4 .wav .ogg
    .flac .avi .mov .mkv .woff .woff2 .ttf .otf .eot .lock .pid .sock""".split())


def read_in_walk(path: Path) -> bool:
    """Whether a folder's walk reads ``path``: a supported extension, or a known text file's name (one
    of a variant too: README.Debian, changelog.amd64, NEWS.source); compressed, what it holds (a .tar.gz
    is an archive, a .pdf.gz not read)."""
    supported = SUPPORTED_SUFFIXES
    if compression(path):
        path, supported = inner(path), READ_COMPRESSED_SUFFIXES
    suffix = path.suffix.lower()
    if suffix in supported:
        return True
    return is_text_name(path)


def is_text_name(path: Path) -> bool:
    """Whether ``path`` (a compressed file's inner name) is a text file by its name: README, LICENSE,
    Makefile, any case, bare or with a variant after a dot (README.Debian, COPYING.LIB), not a binary
    type's suffix nor a format's own (README.md is Markdown)."""
    suffix = path.suffix.lower()
    stem, dot, variant = path.name.lower().partition(".")
    return stem in TEXT_NAMES and (not dot or all(map(str.isalnum, variant.split("."))) and suffix not in
                                   _NOT_TEXT_SUFFIXES and suffix not in SUPPORTED_SUFFIXES)

# What reading a file of a format gives changes as its extraction is mended; each index records the
# version a file was read with, and its next run reads a file an older version read again (counted as
# updated), so an upgrade needs no `--rebuild`. Bump a format's number when its passages change.
# Markdown 2: a heading with nothing under it is a passage. HTML 2: a page declaring a one-byte
# charset over UTF-8 bytes is read as UTF-8. HTML 3: a page declaring UTF-16 or UTF-32 in a <meta> is
# read as UTF-8 (it was read as UTF-16: CJK garbage). JSONL 2: a line that is not UTF-8 is read in the file's
# encoding, not skipped as a bad line; a record's "id" 0 is its id, a title that is no text is
# written out, and the parts of a long record without an id are its hash's "#0", "#1", …. JSONL 3: a
# line starting with a byte-order mark (concatenated Windows exports) is a record, not a bad line.
# Markdown 3: front matter in a file with lone-CR line ends is metadata, not the first passage.
# JSONL 4: a line with spaces before its byte-order mark is a record too. PDF 2: an identifier broken after its
# "_" at a line's end is joined, and a word broken before a capital where the page writes it joined elsewhere;
# the passages of a page of several are located "p. 3 §1", "p. 3 §2". HTML 4: a <title>'s no-break spaces and line
# breaks are plain spaces (Markdown's headings had none; a PDF's metadata title with a line break is rare
# enough not to read every indexed PDF, the slowest format, again for it). Accents composed (NFC, with index
# schema 3) change only text written with combining marks: no format's number was bumped for it, so as not to
# read every corpus again; such a file is composed when it changes (or with --rebuild). JSON 2: a .json file that
# is an array of records is a corpus, not one text. A .jsonl file holding such an array (it gave the records
# on lines of their own and a bad line for each other line) is read so when it changes: JSONL was not bumped,
# so as not to read every corpus again for it. No suffix 2: a README, LICENSE or copyright file is titled by its
# folder too ("gzip/copyright"; a variant, README.Debian, was not read before). Word 2: footnotes and endnotes read.
# EPUB 2: a chapter named in another letter case than its zip name is read (it was dropped from the book).
# CSV 2: read as a table, a row under its column names, cited by rows (it was plain text, by lines). CSV 3, TSV 2,
# Excel 2: a first row whose values come again in their columns is data, not the header; a header repeated
# below is not read as a row; a percentage cell is "12.5%", not 0.125.
# A type read for the first time (Excel's .xlsx, .xlsm, .xls; PowerPoint's .ppt; .ods, .odp) needs no number:
# an index holds no file of it, so its next run adds them, and reads no file of another type again. One of
# text that a folder's walk did not read but a file named on the command line was, read as plain text, is
# 2 where it has a reader of its own now (RTF, e-mail, subtitles), so that such a file is read again by it;
# MDX, Quarto and R Markdown, read as Markdown now, are Markdown's number. LaTeX 2: a .tex file is read by its
# sections, without its preamble, comments and markup (it was plain text); .ltx was not read before.
_READER_VERSIONS = {**{suffix: 3 for suffix in MARKDOWN_SUFFIXES}, **{suffix: 4 for suffix in HTML_SUFFIXES},
                    **{suffix: 2 for suffix in JSON_SUFFIXES}, "": 2, ".docx": 2,
                    **{suffix: 4 for suffix in JSONL_SUFFIXES}, **{suffix: 2 for suffix in PDF_SUFFIXES},
                    **{suffix: 2 for suffix in EPUB_SUFFIXES}, ".csv": 3, ".tsv": 2,
                    **{suffix: 2 for suffix in SPREADSHEET_SUFFIXES},
                    **{suffix: 2 for suffix in RTF_SUFFIXES | MAIL_SUFFIXES | MBOX_SUFFIXES | SUBTITLE_SUFFIXES},
                    ".tex": 2}


def reader_version(path: Path) -> int:
    return _READER_VERSIONS.get(format_suffix(path), 1)
