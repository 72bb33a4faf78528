"""A chart's words and numbers as text (python-pptx reads the chart XML that PowerPoint and Word both write): the
title, then each series a line of its values by category ("Axolotls: 2023: 10; 2024: 20"). A chart that cannot be
read (a damaged part) costs the chart, not the document."""

from __future__ import annotations

import logging

from pptx.chart.chart import Chart
from pptx.oxml import parse_xml

log = logging.getLogger(__name__)


def chart_text(chart: Chart) -> str:
    """The chart's title, then each series a line: its name and its values, each by its category if it has
    one."""
    try:
        lines = [chart.chart_title.text_frame.text] if chart.has_title else []
        for plot in chart.plots:
            categories = [str(category) for category in plot.categories]
            for series in plot.series:
                numbers = list(series.values)
                labels = categories[:len(numbers)] + [""] * (len(numbers) - len(categories))
                values = [
                    f"{label}: {_number(value)}" if label else _number(value)
                    for label, value in zip(labels, numbers, strict=True) if value is not None
                ]
                lines.append(f"{series.name}: {'; '.join(values)}" if series.name else "; ".join(values))
    except Exception:  # python-pptx and lxml raise many types for a damaged chart part
        log.warning("a chart could not be read; the document is read without it", exc_info=True)
        return ""
    return "\n".join(line for line in lines if line.strip())


def chart_part_text(chart_xml: bytes) -> str:
    """``chart_text`` of a chart part's XML, as a package other than a deck holds it (a Word document's)."""
    try:
        chart = Chart(parse_xml(chart_xml), None)
    except Exception:  # lxml raises many types for damaged XML
        log.warning("a chart could not be read; the document is read without it", exc_info=True)
        return ""
    return chart_text(chart)


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)
