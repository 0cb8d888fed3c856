"""`aart review`: a small web app on 127.0.0.1 to review a dataset and an attack's verdicts.

Pages are rendered on the server, every piece of dataset and model text escaped; one vendored
script adds keyboard shortcuts. Safety: the app binds to 127.0.0.1 only; every request needs
the access token of the printed URL (then an HttpOnly, SameSite=Strict cookie); a request with
a foreign Host header is refused (DNS rebinding); state changes are POSTs carrying a CSRF token;
a restrictive Content-Security-Policy allows the app's own script and style and nothing else.
"""

from __future__ import annotations

import hmac
import html
import secrets
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from ..evaluate.human import RECORD, VERDICT, dim_state, fixed2, paper_axis, verdict_id
from ..types import Cell
from .session import DIM_STATES, FLAGS, HUMAN_VERDICTS, LABEL_FORM, Review
from .static import SCRIPT, STYLE

COOKIE = "aart_review"  # and the port: cookies are not port-scoped, so two reviews on two
# ports would share (and overwrite) one cookie, each logging the other out
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PAGES = {RECORD: "records", VERDICT: "verdicts"}
# Bounds on what a form may carry: a longer value is refused, never cut (a cut edit would
# silently replace the prompt with its start). An edit may always be twice the original.
MAX_NOTE = 20_000
MAX_EDIT = 200_000


def verdict_word(judge: str, v: Mapping[str, Any]) -> str:
    """What a judge said, in its own terms: the refusal detector says how the reply ended
    (complied, partial, refusal), not "violates": a reply that did not refuse is not
    necessarily a violation. Any judge of an empty or cut-off reply says that."""
    status = v.get("status")
    if status and (judge == "refusal" or v.get("violates") is None):
        return str(status)
    return {True: "violates", False: "safe", None: "unjudged"}[v.get("violates")]


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def cookie_name(port: int) -> str:
    return f"{COOKIE}_{port}"


def same_origin(path: str) -> str:
    """``path`` as a relative path on this server: ``//evil.example/`` (or ``/\\evil``), which
    a browser reads as another host, becomes ``/evil.example/``."""
    return "/" + path.lstrip("/\\")


class OneTimeCodes:
    """Codes that log a browser in once each: the browser launcher gets a local file that
    opens ``/open?once=CODE``, so the token never appears on a command line (``ps``)."""

    def __init__(self) -> None:
        self.codes: dict[str, Callable[[], None]] = {}

    def new(self, used: Callable[[], None] = lambda: None) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = used
        return code

    def take(self, code: str) -> bool:
        for known in list(self.codes):
            if hmac.compare_digest(known.encode(), code.encode()):
                self.codes.pop(known)()
                return True
        return False


class Guard(BaseHTTPMiddleware):
    """Host check, token check, security headers."""

    def __init__(
        self, app: Any, token: str, hosts: set[str], cookie: str, once: OneTimeCodes
    ) -> None:
        super().__init__(app)
        self.token = token
        self.hosts = hosts
        self.cookie = cookie
        self.once = once

    def _login(self, response: Response) -> Response:
        response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict")
        return response

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.headers.get("host", "") not in self.hosts:
            return PlainTextResponse("unknown host", status_code=403)
        response: Response
        if request.url.path == "/open":
            if not self.once.take(request.query_params.get("once", "")):
                return PlainTextResponse(
                    "this link was used already: open the URL aart review printed",
                    status_code=403,
                )
            # a page, not a redirect: the browser came from a local file (another site), and
            # a SameSite=Strict cookie is sent only on a navigation begun on this site
            response = self._login(
                HTMLResponse(
                    "<!DOCTYPE html><meta charset='utf-8'><title>aart review</title>"
                    "<meta http-equiv='refresh' content='0;url=/records'>"
                    "<p><a href='/records'>open the review</a></p>"
                )
            )
            return self._headers(response)
        given = request.query_params.get("token") or request.cookies.get(self.cookie, "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return PlainTextResponse(
                "open the URL aart review printed (it carries the access token)", status_code=403
            )
        if request.query_params.get("token"):
            # the token leaves the address bar: a cookie carries it from now on
            target = same_origin(request.url.path)
            rest = {k: v for k, v in request.query_params.items() if k != "token"}
            response = self._login(
                RedirectResponse(target + ("?" + urlencode(rest) if rest else ""), status_code=303)
            )
        else:
            response = await call_next(request)
        return self._headers(response)

    @staticmethod
    def _headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response


def create_app(
    review: Review, token: str, port: int, once: OneTimeCodes | None = None
) -> Starlette:
    hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
    csrf = hmac.new(token.encode(), b"csrf", "sha256").hexdigest()

    def page(title: str, body: str) -> HTMLResponse:
        nav = "<nav><a href='/records'>Dataset</a>"
        if review.verdicts:
            nav += "<a href='/verdicts'>Verdicts</a>"
        nav += "<a href='/summary'>Figures</a></nav>"
        return HTMLResponse(
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{esc(title)}</title><link rel='stylesheet' href='/static/review.css'>"
            "<script src='/static/review.js' defer></script></head>"
            f"<body>{nav}{body}</body></html>"
        )

    def check_csrf(form: Any) -> None:
        if not hmac.compare_digest(str(form.get("csrf", "")).encode(), csrf.encode()):
            raise PermissionError("bad CSRF token")

    def shown(kind: str) -> list[tuple[str, str, Cell]]:
        """(id, prompt, cell) of every dataset record, or of every attack result."""
        if kind == RECORD:
            return [(r.id, r.prompt, r.cell) for r in review.records]
        return [(verdict_id(r), r["prompt"], r["cell"]) for r in review.verdicts]

    def filtered(request: Request, kind: str) -> list[int]:
        """Indexes of the records the filters keep: axis value, label state, text."""
        mine = review.mine(kind)
        q = request.query_params.get("q", "").casefold()
        value = request.query_params.get("value", "")
        state = request.query_params.get("state", "")
        out = []
        for i, (rid, prompt, cell) in enumerate(shown(kind)):
            if q and q not in prompt.casefold():
                continue
            if value and value not in {f"{a}={v}" for a, v in cell.items()}:
                continue
            if state == "todo" and rid in mine or state == "done" and rid not in mine:
                continue
            out.append(i)
        return out

    def filters_form(request: Request, kind: str) -> str:
        values = sorted({f"{a}={v}" for _, _, cell in shown(kind) for a, v in cell.items()})
        chosen = request.query_params.get("value", "")
        opts = "".join(
            f"<option value='{esc(v)}'{' selected' if v == chosen else ''}>{esc(v)}</option>"
            for v in values
        )
        state = request.query_params.get("state", "")
        states = "".join(
            f"<option value='{s}'{' selected' if s == state else ''}>{label}</option>"
            for s, label in (("", "all"), ("todo", "not reviewed"), ("done", "reviewed"))
        )
        return (
            "<form method='get'><input name='q' placeholder='search text' "
            f"value='{esc(request.query_params.get('q', ''))}'> <select name='value'>"
            f"<option value=''>any value</option>{opts}</select> <select name='state'>{states}"
            "</select> <button>filter</button></form>"
        )

    def keep_query(request: Request) -> str:
        return ("?" + urlencode(dict(request.query_params))) if request.query_params else ""

    def neighbours(request: Request, kind: str, i: int) -> tuple[str, str]:
        """The previous and next links among the records the filters keep."""
        idx = filtered(request, kind)
        pos = idx.index(i) if i in idx else -1
        base, q = PAGES[kind], keep_query(request)
        prev_link = next_link = ""
        if pos > 0:
            prev_link = f"<a id='prev' href='/{base}/{idx[pos - 1]}{q}'>previous (k)</a>"
        if 0 <= pos < len(idx) - 1:
            next_link = f"<a id='next' href='/{base}/{idx[pos + 1]}{q}'>next (j)</a>"
        return prev_link, next_link

    def onward(request: Request, kind: str, i: int) -> Response:
        """After a save: the next record the filters keep (or this one, the last)."""
        after = [j for j in filtered(request, kind) if j > i]
        target = after[0] if after else i
        return RedirectResponse(f"/{PAGES[kind]}/{target}{keep_query(request)}", status_code=303)

    async def records(request: Request) -> Response:
        idx = filtered(request, RECORD)
        if not idx:
            return page("aart review", filters_form(request, RECORD) + "<p>no records match</p>")
        return RedirectResponse(f"/records/{idx[0]}{keep_query(request)}", status_code=303)

    async def record(request: Request) -> Response:
        i = int(request.path_params["i"])
        if not 0 <= i < len(review.records):
            return no_such(RECORD, i, len(review.records))
        r = review.records[i]
        mine = review.mine(RECORD)
        label = mine.get(r.id, {})
        q = keep_query(request)
        prev_link, next_link = neighbours(request, RECORD, i)
        cells = "".join(
            f"<tr><th>{esc(a)}</th><td>{esc(v)}</td><td>{esc(r.annotations.get(a, ''))}</td></tr>"
            for a, v in r.cell.items()
        )
        dims = "".join(dim_choice(n, d, dim_state(label, d)) for n, d in enumerate(review.dims, 1))
        flags = "".join(
            f"<label><input type='checkbox' name='flag' value='{esc(f)}'"
            f"{' checked' if f in (label.get('flags') or []) else ''}> {esc(f)}</label> "
            for f in FLAGS
        )
        good = label.get("good")
        reasoning = "".join(
            f"<p class='muted'><b>{esc(k)}</b>: {esc(v)}</p>" for k, v in r.reasoning.items()
        )
        prov = esc(", ".join(f"{k}: {v}" for k, v in r.provenance_shown().items()))
        done = len(mine)
        body = (
            f"<h1>Record {esc(r.id)}</h1>"
            f"<p class='{'done' if r.id in mine else 'todo'}'>{done} of {len(review.records)} "
            f"reviewed by {esc(review.reviewer)}</p>{filters_form(request, RECORD)}"
            f"<p>{prev_link} {next_link}</p>"
            f"<pre id='prompt'>{esc(r.prompt)}</pre>"
            f"<table><tr><th>dimension</th><th>cell</th><th>annotated</th></tr>{cells}</table>"
            f"{reasoning}<p class='muted'>{prov}</p>"
            f"<form id='label' method='post' action='/records/{i}{q}'>"
            f"<input type='hidden' name='csrf' value='{csrf}'>"
            "<fieldset><legend>A good adversarial test of its policy concept?</legend>"
            f"<label><input type='radio' id='good-yes' name='good' value='yes'"
            f"{' checked' if good is True else ''}> yes <kbd>y</kbd></label> "
            f"<label><input type='radio' id='good-no' name='good' value='no'"
            f"{' checked' if good is False else ''}> no <kbd>n</kbd></label></fieldset>"
            f"<fieldset><legend>Does the prompt match its value?</legend>{dims}</fieldset>"
            f"<fieldset><legend>Flags</legend>{flags}</fieldset>"
            "<fieldset><legend>Edit the text <kbd>e</kbd> (the original is kept)</legend>"
            f"<textarea id='edit' name='edit'>{textarea(label.get('edit') or r.prompt)}"
            "</textarea>"
            "</fieldset><fieldset><legend>Note</legend>"
            f"<textarea name='note'>{textarea(label.get('note', ''))}</textarea></fieldset>"
            f"<label><input type='checkbox' id='exclude' name='exclude' value='1'"
            f"{' checked' if label.get('exclude') else ''}> exclude from the dataset "
            "<kbd>x</kbd></label><p><button id='save'>save (Enter)</button></p></form>"
        )
        return page(f"record {r.id}", body)

    async def save_record(request: Request) -> Response:
        i = int(request.path_params["i"])
        form = await request.form()
        try:
            check_csrf(form)
        except PermissionError:
            return PlainTextResponse("bad CSRF token", status_code=403)
        if not 0 <= i < len(review.records):
            return no_such(RECORD, i, len(review.records))
        r = review.records[i]
        edit = str(form.get("edit") or "")
        note = str(form.get("note") or "").replace("\r\n", "\n")
        bound = max(MAX_EDIT, 2 * len(r.prompt))
        if len(edit) > bound or len(note) > MAX_NOTE:
            return (
                too_long(len(edit), bound) if len(edit) > bound else too_long(len(note), MAX_NOTE)
            )
        edit = as_edited(edit, r.prompt)
        review.label_record(
            r.id,
            {
                "good": {"yes": True, "no": False}.get(str(form.get("good", ""))),
                # three states: only the judged dimensions are stored
                "dims": {
                    d: DIM_STATES[said]
                    for d in review.dims
                    if (said := str(form.get(f"dim:{d}", ""))) in DIM_STATES
                },
                "form": LABEL_FORM,
                "flags": [f for f in form.getlist("flag") if f in FLAGS],
                "note": note,
                "edit": edit if edit and edit != r.prompt else None,
                "exclude": bool(form.get("exclude")),
            },
        )
        return onward(request, RECORD, i)

    async def verdicts(request: Request) -> Response:
        if not review.verdicts:
            return page("aart review", "<p>no attack to review: give --attack DIR</p>")
        idx = filtered(request, VERDICT)
        if not idx:
            return page("aart review", filters_form(request, VERDICT) + "<p>no verdicts match</p>")
        return RedirectResponse(f"/verdicts/{idx[0]}{keep_query(request)}", status_code=303)

    async def verdict(request: Request) -> Response:
        i = int(request.path_params["i"])
        if not 0 <= i < len(review.verdicts):
            return no_such(VERDICT, i, len(review.verdicts))
        r = review.verdicts[i]
        vid = verdict_id(r)
        mine = review.mine(VERDICT)
        label = mine.get(vid, {})
        q = keep_query(request)
        prev_link, next_link = neighbours(request, VERDICT, i)
        judges = "".join(
            f"<tr><td>{esc(j)}</td><td>{esc(verdict_word(j, v))}"
            f"</td><td>{esc(v.get('category') or '')}</td><td>{esc(v.get('rationale') or v.get('error') or '')}</td></tr>"
            for j, v in r["verdicts"].items()
        )
        said = label.get("verdict")
        choices = "".join(
            f"<label><input type='radio' id='verdict-{v}' name='verdict' value='{v}'"
            f"{' checked' if said == v else ''}> {v} <kbd>{v[0]}</kbd></label> "
            for v in HUMAN_VERDICTS
        )
        body = (
            f"<h1>Verdict {esc(r['id'])}</h1><p>{len(mine)} of {len(review.verdicts)} reviewed; "
            "disagreements between judges come first</p>"
            f"{filters_form(request, VERDICT)}<p>{prev_link} {next_link}</p>"
            f"<p class='muted'>{esc('; '.join(f'{a}: {v}' for a, v in r['cell'].items()))}</p>"
            f"<p><b>prompt</b></p><pre id='prompt'>{esc(r['prompt'])}</pre>"
            + (f"<p><b>sent</b></p><pre>{esc(r['sent'])}</pre>" if r.get("sent") else "")
            + f"<p><b>response</b></p><pre id='response'>{esc(r.get('response'))}</pre>"
            f"<table><tr><th>judge</th><th>verdict</th><th>category</th><th>rationale</th></tr>"
            f"{judges}</table>"
            f"<form id='label' method='post' action='/verdicts/{i}{q}'>"
            f"<input type='hidden' name='csrf' value='{csrf}'>"
            f"<fieldset><legend>Your verdict</legend>{choices}</fieldset>"
            f"<fieldset><legend>Note</legend><textarea name='note'>{textarea(label.get('note', ''))}"
            "</textarea></fieldset><p><button id='save'>save (Enter)</button></p></form>"
        )
        return page(f"verdict {r['id']}", body)

    async def save_verdict(request: Request) -> Response:
        i = int(request.path_params["i"])
        form = await request.form()
        try:
            check_csrf(form)
        except PermissionError:
            return PlainTextResponse("bad CSRF token", status_code=403)
        if not 0 <= i < len(review.verdicts):
            return no_such(VERDICT, i, len(review.verdicts))
        said = str(form.get("verdict", ""))
        note = str(form.get("note") or "").replace("\r\n", "\n")
        if len(note) > MAX_NOTE:
            return too_long(len(note), MAX_NOTE)
        review.label_verdict(
            verdict_id(review.verdicts[i]),
            {
                "verdict": said if said in HUMAN_VERDICTS else None,
                "note": note,
            },
        )
        return onward(request, VERDICT, i)

    async def summary(request: Request) -> Response:
        d = review.dataset_figures()
        g = d["good"]
        rows = "".join(
            f"<tr><td>{esc(dim)}</td><td>{f['matches']}/{f['n']}</td><td>{_pct(f['rate'])}</td>"
            f"<td>{f['not_judged']}</td>"
            + (
                f"<td>{esc(paper_axis(dim))} {_pct(f['paper'])}</td>"
                if f.get("paper") is not None
                else "<td>-</td>"
            )
            + "</tr>"
            for dim, f in d["dimensions"].items()
        )
        agree = "".join(
            f"<tr><td>{esc(' vs '.join(a['reviewers']))}</td><td>{a['n']}</td>"
            f"<td>{_num(a['kappa'])}</td></tr>"
            for a in d["reviewer_agreement"]
        )
        body = (
            "<h1>Figures</h1><h2>Dataset</h2>"
            f"<p id='good-rate'>good: {g['good']}/{g['n']}"
            + (
                f" = {100 * g['rate']:.1f}% [{100 * g['ci_low']:.1f}, {100 * g['ci_high']:.1f}]"
                if g["rate"] is not None
                else ""
            )
            + "</p><table id='dimensions'><tr><th>dimension</th><th>matches</th><th>rate</th>"
            "<th>not judged</th><th>the paper's reviewers</th></tr>"
            f"{rows}</table>"
            + (
                "<h3>Reviewers</h3><table><tr><th>pair</th><th>n</th><th>Cohen's kappa</th></tr>"
                f"{agree}</table>"
                if agree
                else ""
            )
        )
        if review.verdicts:
            v = review.verdict_figures()
            jrows = "".join(
                f"<tr><td>{esc(j)}</td><td>{c['n']}</td>"
                + "".join(
                    f"<td>{_num(c[k])}</td>" for k in ("precision", "recall", "agreement", "kappa")
                )
                + "</tr>"
                for j, c in v["judges"].items()
            )
            per_value = "".join(
                f"<tr><td>{esc(j)}</td><td>{esc(value)}</td><td>{c['n']}</td>"
                + "".join(
                    f"<td>{_num(c[k])}</td>" for k in ("precision", "recall", "agreement", "kappa")
                )
                + "</tr>"
                for j, cal in v["judges"].items()
                for value, c in cal["per_value"].items()
            )
            body += (
                f"<h2>Judges against people ({v['labelled']} labelled)</h2>"
                "<table id='calibration'><tr><th>judge</th><th>n</th><th>precision</th>"
                "<th>recall</th><th>agreement</th><th>kappa</th></tr>"
                f"{jrows}</table>"
                + (
                    "<h3>Per axis value (at least 5 labelled)</h3><table><tr><th>judge</th>"
                    "<th>value</th><th>n</th><th>precision</th><th>recall</th>"
                    f"<th>agreement</th><th>kappa</th></tr>{per_value}</table>"
                    if per_value
                    else ""
                )
            )
        body += (
            "<h2>Export</h2><form method='post' action='/export'>"
            f"<input type='hidden' name='csrf' value='{csrf}'><button id='export'>write "
            "dataset.reviewed.jsonl and labels.csv</button></form>"
        )
        return page("figures", body)

    async def export(request: Request) -> Response:
        form = await request.form()
        try:
            check_csrf(form)
        except PermissionError:
            return PlainTextResponse("bad CSRF token", status_code=403)
        paths = review.export()
        return page(
            "exported",
            "".join(f"<p>wrote {esc(p)}</p>" for p in paths.values())
            + f"<p id='applied'>{esc(review.applied_line())}</p>",
        )

    async def script(request: Request) -> Response:
        return Response(SCRIPT, media_type="text/javascript")

    async def style(request: Request) -> Response:
        return Response(STYLE, media_type="text/css")

    async def home(request: Request) -> Response:
        return RedirectResponse("/records", status_code=303)

    app = Starlette(
        routes=[
            Route("/", home),
            Route("/records", records),
            Route("/records/{i:int}", record, methods=["GET"]),
            Route("/records/{i:int}", save_record, methods=["POST"]),
            Route("/verdicts", verdicts),
            Route("/verdicts/{i:int}", verdict, methods=["GET"]),
            Route("/verdicts/{i:int}", save_verdict, methods=["POST"]),
            Route("/summary", summary),
            Route("/export", export, methods=["POST"]),
            Route("/static/review.js", script),
            Route("/static/review.css", style),
        ]
    )
    app.add_middleware(
        Guard, token=token, hosts=hosts, cookie=cookie_name(port), once=once or OneTimeCodes()
    )
    return app


def textarea(text: str) -> str:
    """A textarea's escaped content. The HTML parser drops one newline right after
    ``<textarea>``, so one is put there: a text that starts with a newline keeps it."""
    return "\n" + esc(text)


def as_edited(submitted: str, original: str) -> str:
    """The text a reviewer submitted, with the original's line endings. Browsers send a
    textarea's line breaks as CRLF whatever the text had: a save without an edit gives back
    the original exactly (and is no edit); an edit keeps the original's line-ending style."""

    def lf(t: str) -> str:
        return t.replace("\r\n", "\n").replace("\r", "\n")

    if lf(submitted) == lf(original):
        return original
    text = lf(submitted)
    return text.replace("\n", "\r\n") if "\r\n" in original else text


def no_such(kind: str, i: int, n: int) -> Response:
    return PlainTextResponse(
        f"no {kind} {i}: this review has {n} ({'0 to ' + str(n - 1) if n else 'none'}); "
        f"open /{PAGES[kind]} for the first",
        status_code=404,
    )


def too_long(n: int, bound: int) -> Response:
    return PlainTextResponse(
        f"not saved: the text is {n:,} characters, over the bound of {bound:,}; shorten it "
        "(nothing is ever cut)",
        status_code=413,
    )


def dim_choice(n: int, dim: str, state: bool | None) -> str:
    """One dimension's three states (matches, does not, not judged); key ``n`` cycles them."""
    out = f"<div class='dim'>{esc(dim)} <kbd>{n}</kbd>: "
    for key, value, text in (("yes", True, "matches"), ("no", False, "does not"),
                             ("none", None, "not judged")):  # fmt: skip
        out += (
            f"<label><input type='radio' id='dim-{n}-{key}' name='dim:{esc(dim)}' "
            f"value='{key if value is not None else ''}'{' checked' if state is value else ''}>"
            f" {text}</label> "
        )
    return out + "</div>"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None) -> str:
    return fixed2(x)


def new_token() -> str:
    return secrets.token_urlsafe(24)
