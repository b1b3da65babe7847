"""LaTeX sources: the text of a paper by its sections, without its preamble, comments, citations,
labels, figures' drawings or markup; cited by the source lines its passages start and end on."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from ragcli.ingest import filetypes
from ragcli.ingest.indexer import build_index
from ragcli.ingest.latex import latex_sections
from ragcli.ingest.reader import read_passages
from ragcli.retrieval.index import TantivyIndex

DATA = Path(__file__).parent / "data" / "latex"
PAPER = DATA / "paper.tex"
MATH = ("w(t) = \\log \\frac{N}{n_t}",)  # display math, kept as written (compact)


def _line(needle: str, path: Path = PAPER) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def _by_title(path: Path = PAPER) -> dict[str, str]:
    passages = read_passages(path)
    found: dict[str, str] = {}
    for p in passages:
        found[p.title] = (found[p.title] + " " + p.text) if p.title in found else p.text
    return found


def test_a_paper_is_read_by_its_sections_with_its_title_and_abstract():
    sections = latex_sections(PAPER, PAPER.read_text())
    assert [s.title for s in sections] == [
        "Sparse Retrieval for Long Documents", "Abstract", "Introduction", "Method", "Method > Scoring",
        "Method > Scoring > Tokenisation", "Conclusion"]
    text = _by_title()
    assert text["Sparse Retrieval for Long Documents"] == "Ana María López, Jürgen Müller"
    assert text["Abstract"] == ("We study how BM25 ranks passages of theses written in LaTeX. "
                                "Our method is 40% faster than the baseline.")
    intro = text["Introduction"]
    assert "Retrieval-augmented generation (RAG) needs clean text." in intro
    assert "zebras" not in intro  # a comment
    assert "hurt ranking (See the appendix for the naïve tokenizer.) and readers alike—as “everyone” knows." in intro
    assert "Costs are $5 per query & 3_000 queries; see Section and García's report." in intro
    assert "- a reader for .tex files; - an evaluation on 1–2 corpora; - (c) a release of the code at " \
           "https://example.org/code." in intro
    scoring = text["Method > Scoring"]
    assert "The score of a term is given by w(t) = \\log \\frac{N}{n_t} where N is the number of documents and " \
           "n_t those holding t." in scoring
    assert "Figure: The indexing pipeline of François." in scoring
    assert "pipeline.pdf" not in scoring and "width" not in scoring and "fig:" not in scoring
    assert "Table: Results on the Straße corpus System Recall Time Baseline 0.61 12 Ours 0.74 7" in scoring
    assert text["Method > Scoring > Tokenisation"] == ("Words are lower-cased; see the tokenizer notes. "
                                                       "tokens = text.lower().split()")
    assert text["Conclusion"] == "Clean text helps the giraffe metric."
    assert text["Method"] == "Method"  # a heading with nothing under it but a subsection
    everything = " ".join(text.values())
    for math in MATH:
        everything = everything.replace(math, "")
    assert not re.search(r"\\[A-Za-z]|[{}]", everything), everything
    for word in ("usepackage", "amssymb", "hyperref", "robertson2009", "garcia2021", "sec:", "walrus", "plain",
                 "refs", "today", "Bonn"):
        assert word not in everything


def test_passages_are_cited_by_the_source_lines_they_start_and_end_on():
    passages = {p.title: p for p in read_passages(PAPER, "paper.tex")}
    assert passages["Conclusion"].location == f"paper.tex:{_line('giraffe')}"
    assert passages["Abstract"].location == f"paper.tex:{_line('We study')}-{_line('Our method')}"
    assert passages["Introduction"].location.startswith(f"paper.tex:{_line('Retrieval-augmented')}-")
    assert passages["Method"].location == f"paper.tex:{_line('section{Method}')}"


def test_latex_has_a_reader_of_its_own_and_a_new_version():
    assert ".tex" in filetypes.LATEX_SUFFIXES and ".tex" not in filetypes.TEXT_SUFFIXES
    assert ".ltx" in filetypes.SUPPORTED_SUFFIXES and ".tex" in filetypes.READ_COMPRESSED_SUFFIXES
    assert filetypes.reader_version(Path("a.tex")) == 2 and filetypes.reader_version(Path("a.tex.gz")) == 2


def test_a_chapter_file_without_a_preamble_is_all_body(tmp_path):
    path = tmp_path / "chapter2.tex"
    path.write_text("\\chapter{Results}\nThe {\\bf otter} swims.\n\\input{tables}\n\\section*{Caveats}\nNone.\n")
    assert [(s.title, " ".join(s.text.split())) for s in latex_sections(path, path.read_text())] == [
        ("Results", "The otter swims."), ("Results > Caveats", "None.")]


def _texts(body: str) -> list[str]:
    return [" ".join(s.text.split()) for s in latex_sections(Path("damaged.tex"), body)]


def test_damaged_files_give_text_never_an_exception_or_a_hang():
    # a stray closing brace and an unclosed argument lose nothing after them
    assert "after" in " ".join(_texts("before } \\textbf{bold text\n\nafter the damage\n"))
    assert "after" in " ".join(_texts("\\section{Broken title\nafter the damage\n"))
    assert "after" in " ".join(_texts("\\cite{key\n\nafter the damage\n"))
    # an unterminated environment: its text kept (a figure's as well), or nothing where there is none
    assert "after" in " ".join(_texts("\\begin{figure}\n\\caption{x}\nafter the damage\n"))
    assert "after" in " ".join(_texts("\\begin{verbatim}\nafter the damage\n"))
    assert "after" in " ".join(_texts("\\begin{equation}\nx = 1\n\nafter the damage\n"))
    assert "after" in " ".join(_texts("$x + y\n\nafter the damage\n"))
    assert "after" in " ".join(_texts("\\begin{itemize}\\item one\n\nafter the damage\n"))
    # 10,000 levels deep, in every kind of group: read at once
    for opening in ("{", "\\textbf{", "\\section{", "\\footnote{", "\\caption{", "\\cite{", "\\begin{figure}",
                    "\\begin{itemize}", "\\href{", "\\(", "\\[", "$$", "\\begin{verbatim}", "\\begin{comment}"):
        closing = "\\end{figure}" if "figure" in opening else "\\end{itemize}" if "itemize" in opening else "}"
        for body in (opening * 10_000 + "deep" + closing * 10_000, opening * 10_000 + "deep",
                     "deep" + closing * 10_000):
            # (no recursion: a stack of its own; no time asserted, a busy machine's clock says nothing)
            " ".join(_texts(body))
    assert _texts("{" * 10_000 + "deep" + "}" * 10_000) == ["deep"]
    assert _texts("") == [] and _texts("\\documentclass{article}\n\\begin{document}\n\\end{document}") == []
    assert _texts("\\\\") == [] and _texts("\\") == [] and _texts("\\'") == [] and _texts("\\verb|x") == ["x"]


def test_a_thesis_of_a_megabyte_is_read_whole():
    body = PAPER.read_text().split("\\begin{document}")[1].split("\\end{document}")[0]
    thesis = "\\documentclass{book}\\begin{document}" + body * (1_000_000 // len(body)) + "\\end{document}"
    sections = latex_sections(Path("thesis.tex"), thesis)  # (its speed: ~0.2 s here; not asserted)
    assert len(sections) > 1000


def test_tex_files_in_a_folder_are_indexed_by_their_words_not_their_preamble(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "paper.tex").write_text(PAPER.read_text())
    (docs / "notes.ltx.gz").write_bytes(gzip.compress(b"\\section{Otters}\nThe otter eats \\emph{sea urchins}.\n"))
    report = build_index([docs], tmp_path / "idx")
    assert report.added == 2 and not report.skipped
    index = TantivyIndex.open(tmp_path / "idx")
    found = index.search("giraffe metric", 3)
    assert [d.title for d in found] == ["Conclusion"]
    assert found[0].location.endswith(f"paper.tex:{_line('giraffe')}")
    assert [d.title for d in index.search("urchins", 3)] == ["Otters"]
    for word in ("amssymb", "hyperref", "graphicx", "inputenc", "zebras", "robertson2009", "walrus"):
        assert index.search(word, 3) == [], word


def test_code_math_pictures_and_definitions_in_the_body():
    body = ("\\newcommand{\\vect}[1]{\\mathbf{#1}}\\def\\foo#1{bar #1}\n"
            "Use \\verb|x{y}| and \\(a^2\\) or $$E = mc^2$$ or \\[ \\sum_i x_i \\] in Stra\\ss e, na\\\"{\\i}ve \\LaTeX{} %\n"
            "\\begin{lstlisting}[language=Python]\nprint(1)\n\\end{lstlisting}\n"
            "\\begin{minted}{rust}\nfn main() {}\n\\end{minted}\n"
            "\\begin{comment}\nhidden words\n\\end{comment}\n"
            "\\begin{tikzpicture}\\node {drawn words};\\end{tikzpicture}\n"
            "\\begin{description}\\item[Term] its meaning\\end{description}\n"
            "\\moduleauthor{Joe Gregorio}{joe@example.org}\n"
            "\\begin{thebibliography}{9}\\bibitem{k} A. Author. A book.\\end{thebibliography}\n")
    sections = latex_sections(Path("notes.tex"), body)
    assert [s.title for s in sections] == ["notes", "References"]
    text = " ".join(sections[0].text.split())
    assert text == ("Use x{y} and a^2 or E = mc^2 or \\sum_i x_i in Straße, naïve LaTeX print(1) fn main() {} "
                    "- Term its meaning Joe Gregorio joe@example.org")
    assert " ".join(sections[1].text.split()) == "A. Author. A book."
    assert sections[0].text.count("\n") == body.split("\\begin{thebibliography}")[0].count("\n")


def test_a_macro_that_names_a_thing_is_read_as_its_words():
    """A paper names its system by a macro (\\newcommand{\\method}{WalrusNet}): each \\method was dropped as an
    unknown command, and the name was in none of its passages. Macros of no arguments and a one-line body
    are read as their words (one defined by another too); one with arguments is not; lines stay where they are."""
    source = ("\\documentclass{article}\n\\newcommand{\\method}{WalrusNet}\n\\newcommand\\data{the Arctic corpus}\n"
              "\\def\\short{AC}\n\\newcommand{\\vect}[1]{\\mathbf{#1}}\n\\newcommand{\\both}{\\method{} on \\data}\n"
              "\\begin{document}\n\\section{Method}\nWe train \\method{} on \\data. \\method is fast.\n"
              "The \\short{} set and \\vect{x}. Also \\both.\n\\end{document}\n")
    [section] = latex_sections(Path("p.tex"), source)
    assert " ".join(section.text.split()) == ("We train WalrusNet on the Arctic corpus. WalrusNet is fast. The AC set "
                                              "and x. Also WalrusNet on the Arctic corpus.")
    assert section.first_line == 8


def test_macros_of_macros_do_not_grow_a_file_without_bound():
    bomb = ("\\newcommand{\\c}{" + "x" * 150 + "}\n\\newcommand{\\b}{" + "\\c" * 60 + "}\n\\newcommand{\\a}{"
            + "\\b" * 60 + "}\n\\begin{document}\n" + "\\a " * 2000 + "\n\\end{document}\n")
    sections = latex_sections(Path("bomb.tex"), bomb)
    assert sum(len(s.text) for s in sections) < 20 * len(bomb) + (4 << 20)
