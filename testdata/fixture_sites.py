"""The fixture crawl's web sites (the boilerplate around each article), junk pages and non-HTML payloads."""

from __future__ import annotations

import html
import struct
import zlib
from collections.abc import Sequence
from typing import Any

# --------------------------------------------------------------------------------------------
# Sites (boilerplate around the article)
# --------------------------------------------------------------------------------------------
SITES: dict[str, dict[str, Any]] = {
    "fieldnotebook": dict(
        host="www.fieldnotebook.example",
        name="The Field Notebook",
        lang="en",
        nav=[
            ("/", "Home"),
            ("/earth/", "Earth"),
            ("/space/", "Space"),
            ("/life/", "Life"),
            ("/newsletter", "Newsletter"),
            ("/about", "About us"),
        ],
        css="body{font-family:Georgia,serif;margin:0;color:#222}.site-nav a{margin-right:1em;color:#0a5}"
        "article{max-width:42em;margin:2em auto}footer{font-size:small;color:#666}",
        head_js="window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments);}"
        "gtag('js',new Date());gtag('config','G-FIELD0001');",
        footer=[
            "\u00a9 2024 The Field Notebook. All rights reserved.",
            "Privacy policy \u00b7 Terms of use \u00b7 Contact the editors",
        ],
        related="More from The Field Notebook",
    ),
    "hearthandtable": dict(
        host="hearthandtable.example",
        name="Hearth & Table",
        lang="en",
        nav=[
            ("/", "Home"),
            ("/recipes/", "Recipes"),
            ("/baking/", "Baking"),
            ("/drinks/", "Drinks"),
            ("/workshop/", "Workshop"),
            ("/shop", "Shop"),
        ],
        css=".topbar{background:#f7efe4;padding:.5em}.entry{font:17px/1.6 sans-serif}"
        ".entry h1{font-size:2.2em}.cookie-banner{position:fixed;bottom:0}",
        head_js="(function(){var s=document.createElement('script');s.async=true;"
        "s.src='https://ads.hearthandtable.example/loader.js';document.head.appendChild(s);})();",
        footer=[
            "Hearth & Table is a reader-supported kitchen journal.",
            "Sign up for our weekly recipes \u00b7 Advertise \u00b7 Cookie settings",
        ],
        related="Readers also enjoyed",
    ),
    "longagoweekly": dict(
        host="www.longagoweekly.example",
        name="Long Ago Weekly",
        lang="en",
        nav=[
            ("/", "Front page"),
            ("/articles/", "Articles"),
            ("/podcast/", "Podcast"),
            ("/archive/", "Archive"),
            ("/donate", "Support us"),
        ],
        css="#masthead{border-bottom:3px double #000}.post-body p{text-indent:1.5em}"
        ".share a{display:inline-block;margin:0 .3em}",
        head_js="var _paq=window._paq=window._paq||[];_paq.push(['trackPageView']);",
        footer=[
            "Long Ago Weekly \u2014 history for curious readers since 2009.",
            "Editorial policy \u00b7 Corrections \u00b7 Privacy",
        ],
        related="Further reading",
    ),
    "backyardalmanac": dict(
        host="backyardalmanac.example",
        name="Backyard Almanac",
        lang="en",
        nav=[
            ("/", "Home"),
            ("/guides/", "Guides"),
            ("/wildlife/", "Wildlife"),
            ("/outdoors/", "Outdoors"),
            ("/calendar", "Planting calendar"),
            ("/forum", "Forum"),
        ],
        css="header{background:#2f4f2f;color:#fff}main{display:flex}article{flex:3}aside{flex:1}",
        head_js="document.documentElement.className+=' js';",
        footer=[
            "Backyard Almanac \u00b7 Growing things since 2012",
            "About \u00b7 Write for us \u00b7 Privacy \u00b7 Terms",
        ],
        related="Popular guides",
    ),
    "curiousminds": dict(
        host="www.curiousminds.example",
        name="Curious Minds",
        lang="en",
        nav=[
            ("/", "Home"),
            ("/explainers/", "Explainers"),
            ("/quizzes/", "Quizzes"),
            ("/ask", "Ask a question"),
            ("/login", "Log in"),
        ],
        css=".navbar{display:flex;gap:1rem}.explainer{max-width:720px}.newsletter-box{border:1px solid #ccc}",
        head_js="window.__CM__={section:'explainers',abTest:'b'};",
        footer=[
            "Curious Minds explains the science of everyday life.",
            "Our team \u00b7 Newsletter \u00b7 Privacy \u00b7 Accessibility",
        ],
        related="Keep exploring",
    ),
    "dailyreadsdigest": dict(
        host="dailyreadsdigest.example",
        name="Daily Reads Digest",
        lang="en",
        nav=[
            ("/", "Top stories"),
            ("/science", "Science"),
            ("/history", "History"),
            ("/food", "Food"),
            ("/trending", "Trending"),
        ],
        css=".digest-wrap{max-width:960px;margin:auto}.ad-slot{min-height:250px;background:#eee}",
        head_js="window.googletag=window.googletag||{cmd:[]};googletag.cmd.push(function(){});",
        footer=[
            "Daily Reads Digest collects the best reading from around the web.",
            "Submit a link \u00b7 Terms \u00b7 Privacy \u00b7 Do not sell my information",
        ],
        related="Trending now",
    ),
    "carnetgourmand": dict(
        host="www.carnetgourmand.example",
        name="Le Carnet Gourmand",
        lang="fr",
        nav=[("/", "Accueil"), ("/recettes/", "Recettes"), ("/boulangerie/", "Boulangerie"), ("/contact", "Contact")],
        css="body{font-family:sans-serif}article{max-width:40em}",
        head_js="window.cg={page:'recette'};",
        footer=[
            "\u00a9 2024 Le Carnet Gourmand. Tous droits réservés.",
            "Mentions légales \u00b7 Politique de confidentialité",
        ],
        related="À lire aussi",
    ),
    "wanderfreunde": dict(
        host="www.wanderfreunde.example",
        name="Wanderfreunde",
        lang="de",
        nav=[("/", "Startseite"), ("/touren/", "Touren"), ("/ausruestung/", "Ausrüstung"), ("/kontakt", "Kontakt")],
        css="body{font-family:Verdana,sans-serif}.tour{max-width:45em}",
        head_js="window.wf={consent:false};",
        footer=["\u00a9 2024 Wanderfreunde e.V.", "Impressum \u00b7 Datenschutz"],
        related="Weitere Touren",
    ),
    "historiasdesabor": dict(
        host="historiasdesabor.example",
        name="Historias de Sabor",
        lang="es",
        nav=[("/", "Inicio"), ("/articulos/", "Artículos"), ("/recetas/", "Recetas"), ("/contacto", "Contacto")],
        css="body{font-family:serif}.articulo{max-width:42em}",
        head_js="window.hds={v:2};",
        footer=["\u00a9 2024 Historias de Sabor.", "Aviso legal \u00b7 Política de privacidad"],
        related="También te puede interesar",
    ),
    "zelenydom": dict(
        host="zelenydom.example",
        name="Зелёный дом",
        lang="ru",
        nav=[("/", "Главная"), ("/sovety/", "Советы"), ("/rasteniya/", "Растения"), ("/kontakty", "Контакты")],
        css="body{font-family:Arial,sans-serif}.post{max-width:44em}",
        head_js="window.zd={counter:1};",
        footer=["\u00a9 2024 Зелёный дом. Все права защищены.", "Политика конфиденциальности"],
        related="Читайте также",
    ),
    "puteshestviya": dict(
        host="puteshestviya.example",
        name="Путешествия по России",
        lang="ru",
        nav=[("/", "Главная"), ("/stati/", "Статьи"), ("/marshruty/", "Маршруты"), ("/o-nas", "О нас")],
        css="body{font-family:Tahoma,sans-serif}.stati{max-width:44em}",
        head_js="window.pt={ym:1};",
        footer=["\u00a9 2024 Путешествия по России", "Правила использования материалов"],
        related="Похожие статьи",
    ),
    "dealhunter": dict(
        host="cheap-flights-deals-best.example",
        name="BEST CHEAP FLIGHTS DEALS",
        lang="en",
        nav=[("/", "Home"), ("/deals", "Deals"), ("/hotels", "Hotels")],
        css="body{background:#ff0;color:#f00}",
        head_js="setTimeout(function(){window.open('/popup')},3000);",
        footer=["cheap flights | cheap hotels | best deals"],
        related="Hot deals",
    ),
    "fastenerdepot": dict(
        host="www.fastenerdepot.example",
        name="Fastener Depot",
        lang="en",
        nav=[("/", "Home"), ("/catalog/", "Catalog"), ("/cart", "Cart (0)"), ("/account", "My account")],
        css=".sku-list li{font-family:monospace}",
        head_js="window.fd={cart:[]};",
        footer=["Fastener Depot \u00b7 Free shipping on orders over $50", "Returns \u00b7 Shipping \u00b7 Terms"],
        related="Customers also bought",
    ),
    "guestbook": dict(
        host="members.pagebuilder.example",
        name="Dave's Home Page",
        lang="en",
        nav=[("/~dave/", "Home"), ("/~dave/guestbook", "Guestbook"), ("/~dave/links", "Links")],
        css="body{background:#000080;color:#fff}marquee{color:#ff0}",
        head_js="var hits=0;",
        footer=["Powered by PageBuilder"],
        related="Webrings",
    ),
    "comingsoon": dict(
        host="www.maplegrovebakery.example",
        name="Maple Grove Bakery",
        lang="en",
        nav=[("/", "Home")],
        css="body{text-align:center;padding-top:20vh}",
        head_js="",
        footer=["\u00a9 2024 Maple Grove Bakery"],
        related="",
    ),
}


def esc(s: str) -> str:
    return html.escape(s, quote=False)


def render_html(
    site_key: str,
    title: str,
    body_html: str,
    *,
    charset: str = "utf-8",
    related: Sequence[tuple[str, str]] = (),
    breadcrumb: str | None = None,
) -> str:
    """A full page: head with inline style and script, header nav, main content, aside, footer."""
    s = SITES[site_key]
    nav = "".join(f'<li><a href="{href}">{esc(label)}</a></li>' for href, label in s["nav"])
    rel = ""
    if related:
        items = "".join(f'<li><a href="{href}">{esc(label)}</a></li>' for href, label in related)
        rel = f'<aside class="related">\n<h2>{esc(s["related"])}</h2>\n<ul>{items}</ul>\n</aside>\n'
    crumbs = ""
    if breadcrumb:
        crumbs = f'<div class="breadcrumbs"><a href="/">{esc(s["nav"][0][1])}</a> &rsaquo; {esc(breadcrumb)}</div>\n'
    foot = "\n".join(f"<p>{esc(line)}</p>" for line in s["footer"])
    head_js = f"<script>{s['head_js']}</script>\n" if s["head_js"] else ""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{s["lang"]}">\n<head>\n'
        f'<meta charset="{charset}">\n'
        f"<title>{esc(title)} | {esc(s['name'])}</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<style>{s['css']}</style>\n"
        f"{head_js}"
        "</head>\n<body>\n"
        f'<header class="site-header">\n<a class="logo" href="/">{esc(s["name"])}</a>\n'
        f'<nav class="site-nav"><ul>{nav}</ul></nav>\n</header>\n'
        f"<main>\n{crumbs}{body_html}{rel}</main>\n"
        f'<footer class="site-footer">\n{foot}\n</footer>\n'
        "<script>document.querySelectorAll('a[data-track]').forEach(function(a){"
        "a.addEventListener('click',function(){console.log('track')})});</script>\n"
        "</body>\n</html>\n"
    )


def article_html(title: str, ps: list[str], *, wrap: str = "") -> str:
    """The <article> element. `wrap` inserts raw-source line breaks/indentation inside paragraphs
    (as some CMSs do): it changes whitespace only, never the words."""
    out = [f"<article>\n<h1>{esc(title)}</h1>\n"]
    for p in ps:
        text = esc(p)
        if wrap:
            words = text.split(" ")
            text = "".join(w + (wrap if i % 9 == 8 else " ") for i, w in enumerate(words)).rstrip()
        out.append(f"<p>{text}</p>\n")
    out.append("</article>\n")
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Junk pages and non-HTML payloads
# --------------------------------------------------------------------------------------------
def junk_nav() -> tuple[str, str]:
    topics = [
        "Geology",
        "Volcanoes",
        "Earthquakes",
        "Oceans",
        "Weather",
        "Climate",
        "Astronomy",
        "Planets",
        "Stars",
        "Birds",
        "Insects",
        "Fungi",
        "Trees",
        "Mammals",
        "Fossils",
    ]
    links = "".join(f'<li><a href="/topics/{t.lower()}/">{t}</a></li>' for t in topics)
    body = (
        f'<div class="topic-index">\n<h2>Browse topics</h2>\n<ul>{links}</ul>\n'
        '<div class="pager"><a href="?page=1">1</a> <a href="?page=2">2</a> '
        '<a href="?page=3">3</a> <a href="?page=2">Next &raquo;</a></div>\n</div>\n'
    )
    text = "\n".join(["Browse topics"] + topics + ["1 2 3 Next \u00bb"])
    return render_html("fieldnotebook", "Topics", body, breadcrumb="Topics"), text


def junk_spam() -> tuple[str, str]:
    tags = [
        "#cheapflights",
        "#travel",
        "#deals",
        "#flightdeals",
        "#cheaphotels",
        "#vacation",
        "#wanderlust",
        "#travelgram",
        "#booking",
        "#lastminute",
        "#holiday",
        "#airfare",
    ]
    lines = [
        "cheap flights cheap flights best cheap flights deals cheap airline tickets cheap tickets",
        " ".join(tags),
        "best deals best hotels best flights cheap hotels cheap hotels near me cheap cheap cheap",
        " ".join(tags[::-1]),
        "CLICK HERE cheap flights 2024 cheap flights today cheap flights deals deals deals",
        " ".join(tags[3:] + tags[:3]),
    ]
    body = '<div class="content">\n' + "".join(f"<p>{esc(line)}</p>\n" for line in lines) + "</div>\n"
    return render_html("dealhunter", "cheap flights cheap hotels best deals", body), "\n".join(lines)


def junk_bullets() -> tuple[str, str]:
    finishes = ["zinc plated", "stainless steel", "black oxide", "hot-dip galvanized"]
    sizes = ["M6 x 20", "M6 x 30", "M8 x 25", "M8 x 40", "M10 x 30", "M10 x 50", "M12 x 40", "M12 x 60"]
    items = []
    n = 0
    for size in sizes:
        for fin in finishes:
            n += 1
            sku = f"HXB-{4100 + n * 7:05d}-{fin.split()[0][:2].upper()}"
            items.append(f"{sku} Hex bolt {size} mm, {fin}, pack of 50 \u2014 ${3.49 + n * 0.37:.2f}")
    body = (
        '<div class="catalog">\n<h1>Hex bolts</h1>\n<ul class="sku-list">\n'
        + "".join(f"<li>{esc(i)}</li>\n" for i in items)
        + "</ul>\n</div>\n"
    )
    text = "Hex bolts\n" + "\n".join("- " + i for i in items)
    return render_html("fastenerdepot", "Hex bolts", body, breadcrumb="Catalog"), text


def junk_repetition() -> tuple[str, str]:
    lines = ["Welcome to my guestbook! Please sign it before you leave."]
    for i in range(12):
        lines.append("Great site, thanks for sharing! Visit my page for free followers and likes.")
        lines.append("Sign my guestbook and I will sign yours, click the link below now.")
        if i % 4 == 3:
            lines.append("Free followers and likes here, click the link below now!")
    body = (
        '<div class="guestbook">\n<h1>Guestbook</h1>\n'
        + "".join(f'<div class="entry"><p>{esc(line)}</p></div>\n' for line in lines)
        + "</div>\n"
    )
    return render_html("guestbook", "Guestbook", body), "\n".join(["Guestbook"] + lines)


def junk_short() -> tuple[str, str]:
    lines = ["Coming soon", "Our new website is under construction. Check back later!"]
    body = f'<div class="splash">\n<h1>{lines[0]}</h1>\n<p>{lines[1]}</p>\n</div>\n'
    return render_html("comingsoon", "Coming soon", body), "\n".join(lines)


def not_found_page() -> str:
    body = (
        '<div class="error-page">\n<h1>Page not found</h1>\n'
        "<p>Sorry, the page you are looking for does not exist or has been moved.</p>\n"
        '<p><a href="/">Return to the homepage</a></p>\n</div>\n'
    )
    return render_html("curiousminds", "Page not found", body)


def tiny_pdf() -> bytes:
    """A small, structurally valid one-page PDF (correct xref offsets)."""
    content = b"BT /F1 14 Tf 24 60 Td (Annual report 2023) Tj ET\n"
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 120] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"endstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def tiny_png() -> bytes:
    """A valid 4x4 RGB PNG. The IDAT uses a stored (uncompressed) deflate block, so the bytes do
    not depend on the zlib build."""
    w = h = 4
    raw = b"".join(b"\x00" + b"".join(bytes(((x * 60) % 256, (y * 60) % 256, 160)) for x in range(w)) for y in range(h))
    stored = (
        b"\x78\x01"
        + b"\x01"
        + struct.pack("<HH", len(raw), 0xFFFF ^ len(raw))
        + raw
        + struct.pack(">I", zlib.adler32(raw))
    )

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", stored)
        + chunk(b"IEND", b"")
    )
    assert zlib.decompress(stored) == raw
    return png
