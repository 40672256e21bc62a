"""Each failing test of a JUnit XML with what it said: its name and class as the XML gives them, the failure's
message and stack trace, its duration. PyTorch's HUD shows them as a job's failed tests (RFC-0054's
failed_tests_json); a collection error is no test (results.read_junit counts it apart) and is left out."""

from __future__ import annotations

from xml.etree.ElementTree import ParseError

from junitparser import Error, Failure, JUnitXml, JUnitXmlError, TestSuite

from crcr.suites.results import COLLECTION_FAILURE


def failure_details(junit: bytes) -> list[dict]:
    """[{name, classname, message, stacktrace, duration}] of the failed and errored tests, in the XML's order; none
    of XML that does not parse (the suite's verdict says so)."""
    try:
        xml = JUnitXml.fromstring(junit)
    except (JUnitXmlError, ParseError, ValueError, LookupError):
        return []
    details = []
    for suite in [xml] if isinstance(xml, TestSuite) else list(xml):
        for case in suite:
            said = [r for r in case.result if isinstance(r, (Failure, Error))]
            if not said or any(isinstance(r, Error) and r.message == COLLECTION_FAILURE for r in said):
                continue
            details.append({"name": case.name or "", "classname": case.classname or "",
                            "message": said[0].message or "", "stacktrace": said[0].text or "",
                            "duration": max(float(case.time or 0), 0.0)})
    return details
