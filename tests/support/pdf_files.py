"""Small real PDFs written byte by byte (no PDF-writing library is a dependency): lines of Helvetica text,
from the top of each page down, the way a text layer holds them; and such a PDF encrypted (by pypdf, which reads
them anyway)."""

from __future__ import annotations

import io

from pypdf import PdfWriter

_TOP = 760  # points from the bottom of a US Letter page
_LINE_HEIGHT = 14


def pdf(pages: list[str | list[str]]) -> bytes:
    """A PDF whose page i shows ``pages[i]``: one line, or lines from the top down; an empty string or list
    makes a page without text."""
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for lines in pages:
        content = _content([lines] if isinstance(lines, str) and lines else lines or [])
        objects.append(f"<< /Length {len(content.encode('latin-1'))} >>\nstream\n{content}\nendstream")
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {len(objects)} 0 R >>"
        )
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    document = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(document))
        document += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref_offset = len(document)
    document += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    document += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref_offset}\n%%EOF\n"
    document += trailer.encode()
    return bytes(document)


def _content(lines: list[str]) -> str:
    if not lines:
        return ""
    shown = f" 0 -{_LINE_HEIGHT} Td ".join(f"({_escaped(line)}) Tj" for line in lines)
    return f"BT /F1 12 Tf 72 {_TOP} Td {shown} ET"


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def encrypted(pdf: bytes, user_password: str, algorithm: str = "AES-256") -> bytes:
    """``pdf`` encrypted: opened by ``user_password`` ("": by anyone, restricted by an owner password only)."""
    writer = PdfWriter(clone_from=io.BytesIO(pdf))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm=algorithm)
    output = io.BytesIO()
    writer.write(output)
    return output.getvalue()
