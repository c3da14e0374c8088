"""What the fixture crawl holds, file by file: its pages (text from fixture_pages.yaml, dressed by their sites),
metadata and revisit records."""

from __future__ import annotations

from pathlib import Path

import yaml

from testdata.fixture_sites import (
    SITES,
    article_html,
    junk_bullets,
    junk_nav,
    junk_repetition,
    junk_short,
    junk_spam,
    not_found_page,
    render_html,
    tiny_pdf,
    tiny_png,
)

_PAGES = yaml.safe_load((Path(__file__).parent / "fixture_pages.yaml").read_text(encoding="utf-8"))
# key -> (site, path, title, paragraphs)
ARTICLES = {key: (a["site"], a["path"], a["title"], a["paragraphs"]) for key, a in _PAGES["articles"].items()}
# key of the original -> [(old sentence, new sentence)]
NEAR_EDITS = {key: [(old, new) for old, new in edits] for key, edits in _PAGES["near_edits"].items()}
# key -> (site, path, lang, charset, title, paragraphs)
FOREIGN = {
    key: (f["site"], f["path"], f["lang"], f["charset"], f["title"], f["paragraphs"])
    for key, f in _PAGES["foreign"].items()
}


def url_of(site: str, path: str) -> str:
    return f"https://{SITES[site]['host']}{path}"


def related_for(site: str) -> list[tuple[str, str]]:
    mine = [(path, title) for _, (s, path, title, _) in ARTICLES.items() if s == site][:3]
    return mine or [("/", "Home")]


def article_page(
    key: str, *, site: str | None = None, path: str | None = None, title_case=None, wrap: str = "", edits=None
) -> dict:
    osite, opath, title, ps = ARTICLES[key]
    site, path = site or osite, path or opath
    ps = list(ps)
    for old, new in edits or []:
        hits = [i for i, p in enumerate(ps) if old in p]
        assert len(hits) == 1, (key, old)
        ps[hits[0]] = ps[hits[0]].replace(old, new)
    shown_title = title_case(title) if title_case else title
    section = path.strip("/").split("/")[0].replace("-", " ").title()
    page = render_html(
        site, shown_title, article_html(shown_title, ps, wrap=wrap), related=related_for(site), breadcrumb=section
    )
    # the article text as the HTML holds it (source whitespace included)
    text = "\n\n".join(
        [shown_title]
        + [
            p if not wrap else "".join(w + (wrap if i % 9 == 8 else " ") for i, w in enumerate(p.split(" "))).rstrip()
            for p in ps
        ]
    )
    return dict(
        url=url_of(site, path),
        body=page.encode("utf-8"),
        charset="utf-8",
        content_type="text/html; charset=utf-8",
        article_key=key,
        text=text,
        lang="en",
    )


def foreign_page(key: str) -> dict:
    site, path, lang, charset, title, ps = FOREIGN[key]
    page = render_html(
        site,
        title,
        article_html(title, ps),
        charset=charset,
        related=[("/", SITES[site]["nav"][0][1])],
        breadcrumb=SITES[site]["nav"][1][1],
    )
    # windows-1251 page: charset only in <meta charset>, not in the HTTP header
    ctype = "text/html" if charset != "utf-8" else "text/html; charset=utf-8"
    return dict(
        url=url_of(site, path),
        body=page.encode(charset),
        charset=charset,
        content_type=ctype,
        kind="non_english",
        lang=lang,
        text="\n\n".join([title] + ps),
    )


def junk_page(fn, site: str, path: str, junk_kind: str) -> dict:
    page, text = fn()
    return dict(
        url=url_of(site, path),
        body=page.encode("utf-8"),
        charset="utf-8",
        content_type="text/html; charset=utf-8",
        kind="junk",
        junk_kind=junk_kind,
        text=text,
    )


def plan() -> list[tuple[str, bool, list[dict]]]:
    """[(file name, gzip, items)]; items are pages (responses), metadata and revisit records."""
    A = article_page

    def near(key, site, path):
        return dict(A(key, site=site, path=path, edits=NEAR_EDITS[key]), near_of=key)

    f0 = [
        A("canyon"),
        A("stock"),
        # syndicated copy that precedes its "original" (which is in crawl-00002): this one survives
        dict(A("gothic", site="dailyreadsdigest", path="/history/2024/03/why-gothic-cathedrals-soar")),
        A("jupiter"),
        dict(type="metadata", of=3),
        A("compost"),
        junk_page(junk_spam, "dealhunter", "/cheap-flights-cheap-hotels-best-deals-2024", "spam"),
        A("press"),
        A("terns"),
        foreign_page("fr"),
        dict(
            url=url_of("longagoweekly", "/files/annual-report-2023.pdf"),
            body=tiny_pdf(),
            content_type="application/pdf",
            kind="not_html",
        ),
        A("sourdough"),
        A("tides"),
        junk_page(junk_nav, "fieldnotebook", "/topics/", "nav"),
        A("sky"),
    ]
    f1 = [
        A("roads"),
        A("bees"),
        # exact copy, later file, whitespace-reflowed source
        A("canyon", site="dailyreadsdigest", path="/science/2024/03/slot-canyons-carved-by-floods", wrap="\n      "),
        foreign_page("de"),
        A("fungi"),
        A("chisel"),
        dict(A("tea"), malformed=True),
        near("jupiter", "dailyreadsdigest", "/science/2024/03/jupiter-moons-binoculars-guide"),
        junk_page(junk_bullets, "fastenerdepot", "/catalog/hex-bolts?sort=sku", "bullets"),
        A("storm"),
        foreign_page("es"),
        dict(
            url=url_of("curiousminds", "/explainers/why-do-cats-purr"),
            body=not_found_page().encode(),
            charset="utf-8",
            content_type="text/html; charset=utf-8",
            status=(404, "Not Found"),
            kind="http_error",
        ),
        A("chain"),
        dict(
            url=url_of("backyardalmanac", "/images/seedling-icon.png"),
            body=tiny_png(),
            content_type="image/png",
            kind="not_html",
        ),
    ]
    f2 = [
        A("coffee"),
        A("gothic"),  # the publisher's own page, crawled after the syndicated copy
        A("lava"),
        dict(type="metadata", of=2),
        foreign_page("ru"),
        # exact copy, later file, upper-cased headline and reflowed source
        A(
            "sourdough",
            site="dailyreadsdigest",
            path="/food/2024/03/keep-your-sourdough-starter-alive",
            title_case=str.upper,
            wrap="\n  ",
        ),
        near("compost", "dailyreadsdigest", "/food/2024/03/beginners-guide-compost"),
        A("alexandria"),
        junk_page(junk_repetition, "guestbook", "/~dave/guestbook", "repetition"),
        A("mercator"),
        foreign_page("ru1251"),
        near("tides", "backyardalmanac", "/outdoors/tides-explained"),
        A("loanwords"),
        junk_page(junk_short, "comingsoon", "/", "short"),
        A("clock"),
        dict(type="revisit", url=url_of("curiousminds", "/explainers/why-is-the-sky-blue")),
    ]
    return [("crawl-00000.warc.gz", True, f0), ("crawl-00001.warc.gz", True, f1), ("crawl-00002.warc", False, f2)]
