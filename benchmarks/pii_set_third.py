"""The third held-out set's generators (benchmarks/make_pii_set.py `--held-out 3`), written blind, for IPv4."""

from __future__ import annotations

from pii_set_tuning import between, fmt, one_of
from pii_set_held_out import HELD_OUT_CONTEXTS, HeldOutMix, SECOND_HELD_OUT_CONTEXTS, SECOND_HELD_OUT_PHONE_FORMATS


# --- the third held-out set (--held-out 3) ----------------------------------------------------
# Written after both earlier held-out sets had been tuned on, before any rule was changed for it, by someone who
# had not read the rules (nor the stage's code, its design notes or its benchmark section) and did not run the
# stage on it: for an honest score of IPv4 addresses. IPv4 addresses (a fifth of them private) in contexts of
# their own, taken from where addresses really stand in web text (auth, firewall and mail logs, ping and
# traceroute output, hosts files, server configs, JSON, tables, forum prose), and look-alikes of their own, most
# drawn at random from a shape: software, OS, driver and .NET assembly versions, clause and outline numbers,
# enzyme (EC) numbers, OIDs, dotted dates, classification and tariff numbers, sports figures, amounts with
# dotted thousands, router firmware, address patterns with wildcards and invalid addresses. E-mail addresses,
# IPv6 addresses and phone numbers are the second held-out set's generators in its contexts.

THIRD_HELD_OUT_SEED = 3003
THIRD_HELD_OUT_CONTEXTS = {
    "ipv4": [
        "sshd[2143]: Failed password for root from {} port 22 ssh2",  # auth log
        "fail2ban.actions [1187]: NOTICE [sshd] Ban {}",
        "-A INPUT -s {} -j DROP",  # iptables rule
        "64 bytes from {}: icmp_seq=2 ttl=54 time=18.7 ms",  # ping output
        " 8  {}  24.118 ms  23.906 ms  24.310 ms",  # traceroute -n: a hop number, then the address
        "\n{}\tintranet.local intranet",  # a hosts-file line: the address starts it
        "listen {}:80;",  # nginx
        "Allow from {}",  # apache
        "nameserver {}",  # resolv.conf
        "whois {} | grep -i netname",
        '{{"ip": "{}", "city": "Frankfurt am Main", "org": "AS24940 Hetzner Online GmbH"}}',  # a geo-IP answer
        "Received: from mx2.mailhost.example ([{}]) by mx.example.com with ESMTPS",  # a spam report's header
        "Last login: Tue Mar 12 09:41:07 2024 from {}",
        "| web-04 | {} | Ubuntu 22.04 | running |",  # a table of servers
        "My router's WAN IP is {} but port forwarding still doesn't work.",
        "I can ping {} but not the hostname, so it must be DNS.",
        "For me the site resolves to {}, which is the old host.",
        "All of the spam sign-ups came from {} over two nights.",
        "The ISP moved our office to {} last week and now the VPN won't connect.",
        "Then I tried {} directly in the browser and it loaded.",
    ],
}


def _third_held_out_lookalikes() -> dict:
    """{what: a function of the random generator that writes one}."""

    def pick(*values):
        return lambda rng: rng.choice(values)

    def padded(low, high, width):
        return lambda rng: f"{rng.randint(low, high):0{width}d}"

    windows = pick("17763", "19044", "19045", "20348", "22000", "22621", "22631", "26100")

    def patch_and_build(rng):  # a patch number (0 to 20) or a build number, then a revision or build number
        patch = rng.randint(0, 20) if rng.random() < 0.6 else rng.randint(100, 34999)
        return patch, rng.randint(0, 299) if rng.random() < 0.5 else rng.randint(300, 9999)

    def four_part(rng):  # a version of four parts, as applications number theirs (12.13.1.3, 8.110.0.215)
        patch, build = patch_and_build(rng)
        return f"{rng.randint(1, 30)}.{rng.randint(0, 120)}.{patch}.{build}"

    def upgrade(rng):  # from one four-part version to a later one of the same major version
        major, minor, (patch, build) = rng.randint(1, 30), rng.randint(0, 110), patch_and_build(rng)
        later = f"{major}.{minor + rng.randint(1, 10)}.{rng.randint(0, patch)}.{rng.randint(0, 9999)}"
        return f"from {major}.{minor}.{patch}.{build} to {later}"

    def geforce(rng):  # a GeForce driver and its Windows version: 546.33 is 31.0.15.4633
        driver, minor = rng.randint(456, 566), rng.randint(0, 99)
        five = f"{driver}{minor:02d}"
        return f"{driver}.{minor:02d} ({'31.0.15' if driver >= 500 else '30.0.14'}.{five[1:]})"

    apps = pick(
        "iTunes",
        "Skype",
        "OneDrive",
        "Citrix Workspace",
        "Garmin Express",
        "Logitech Options",
        "Veeam Agent",
        "Sophos Endpoint",
    )
    standards = pick("IEC 61508-3", "EN 50128", "IATF 16949", "AS9100D", "ISO 26262-6", "DO-178C", "IEC 62304")
    enzymes = pick(
        "trypsin (EC 3.4.21.4)",
        "lysozyme (EC 3.2.1.17)",
        "catalase (EC 1.11.1.6)",
        "carbonic anhydrase (EC 4.2.1.1)",
        "DNA polymerase (EC 2.7.7.7)",
        "hexokinase (EC 2.7.1.1)",
        "alcohol dehydrogenase (EC 1.1.1.1)",
        "urease (EC 3.5.1.5)",
    )
    token = pick("b77a5c561934e089", "31bf3856ad364e35", "b03f5f7f11d50a3a", "30ad4fe6b2a6aeed")
    day, month = padded(1, 28, 2), padded(1, 12, 2)
    return {
        "os-build": one_of(
            fmt("Microsoft Windows [Version 10.0.{b}.{r}]", b=windows, r=between(1, 5000)),
            fmt("Windows Server 2019 (10.0.17763.{r})", r=between(100, 6000)),
            fmt("ntdll.dll, file version 10.0.{b}.{r}", b=windows, r=between(1, 5000)),
            fmt(
                "SQL Server 2019 (RTM-CU{cu}) - 15.0.{b}.{r} (X64)",
                cu=between(1, 28),
                b=between(4003, 4360),
                r=between(1, 9),
            ),
            fmt("KB50{k} (OS Build {b}.{r})", k=between(10000, 49999), b=windows, r=between(1, 5000)),
            fmt(
                "macOS 14.{a}.{b} (23{c}{d})",
                a=between(0, 6),
                b=between(0, 2),
                c=pick("A", "B", "C", "D", "E"),
                d=between(5, 344),
            ),
        ),
        "app-version": one_of(
            fmt(
                "Google Chrome {a}.0.{b}.{c} (Official Build) (64-bit)",
                a=between(109, 131),
                b=between(5414, 6778),
                c=between(1, 265),
            ),
            fmt(
                "The Stable channel has been updated to {a}.0.{b}.{c} for Windows and Mac",
                a=between(109, 131),
                b=between(5414, 6778),
                c=between(1, 265),
            ),
            fmt("Vivaldi {a}.{b}.{c}.{e}", a=between(5, 7), b=between(0, 9), c=between(2800, 3400), e=between(3, 60)),
            fmt("{p} {pre}{v}", p=apps, pre=pick("", "v", "ver. ", "Ver "), v=four_part),
            fmt("{p} ({v})", p=apps, v=four_part),
            fmt("Upgrading {p} {u} fixed it", p=apps, u=upgrade),
            fmt("Notepad++ v8.{a}.{b}", a=between(1, 6), b=between(1, 9)),
            fmt("Thunderbird 115.{a}.{b}", a=between(0, 18), b=between(0, 3)),
        ),
        "driver-version": one_of(
            fmt("NVIDIA display driver {a}.0.15.{c}", a=between(27, 32), c=between(1000, 6999)),
            fmt("GeForce Game Ready Driver {v}", v=geforce),
            fmt("Intel Graphics Driver 31.0.101.{c}", c=between(2100, 5999)),
            fmt("Realtek HD Audio Driver ver. 6.0.{b}.{c}", b=between(8000, 9700), c=between(1, 9)),
            fmt("Intel Wi-Fi driver {a}.{b}.0.{c}", a=between(22, 23), b=between(10, 60), c=between(1, 9)),
            fmt("BIOS ver. 1.{a}.0", a=between(2, 30)),
        ),
        "assembly-version": one_of(
            fmt('[assembly: AssemblyVersion("{a}.{b}.0.0")]', a=between(1, 16), b=between(0, 9)),
            fmt("Version={a}.0.0.0, Culture=neutral, PublicKeyToken={t}", a=between(1, 13), t=token),
            fmt('oldVersion="0.0.0.0-{a}.0.0.0" newVersion="{a}.0.0.0"', a=between(4, 13)),
            fmt(
                'AssemblyFileVersion("{a}.{b}.{c}.{e}")',
                a=between(1, 9),
                b=between(0, 20),
                c=between(0, 99),
                e=between(1000, 65000),
            ),
            fmt("<Version>{a}.{b}.{c}</Version>", a=between(1, 9), b=between(0, 20), c=between(0, 40)),
        ),
        "clause-number": one_of(
            fmt(
                "{s} {a}.{b}.{c}.{e}", s=standards, a=between(4, 10), b=between(1, 9), c=between(1, 9), e=between(1, 12)
            ),
            fmt(
                "{s}, clause {a}.{b}.{c}.{e}",
                s=standards,
                a=between(4, 10),
                b=between(1, 9),
                c=between(1, 9),
                e=between(1, 12),
            ),
            fmt("per {a}.{b}.{c}.{e}", a=between(10, 60), b=between(1, 9), c=between(1, 9), e=between(1, 20)),
            fmt(
                "as required by {a}.{b}.{c}.{e} of {s}",
                s=standards,
                a=between(4, 10),
                b=between(1, 9),
                c=between(1, 9),
                e=between(1, 12),
            ),
            fmt("ISO/IEC 27001:2013 A.{a}.{b}.{c}", a=between(5, 18), b=between(1, 7), c=between(1, 9)),
            fmt("IEC 62443-3-3 SR {a}.{b}", a=between(1, 7), b=between(1, 13)),
            fmt("IEC 60364-4-41 clause {a}.{b}.{c}", a=between(410, 419), b=between(1, 6), c=between(1, 9)),
        ),
        "enzyme-ec": one_of(
            fmt("EC {a}.{b}.{c}.{e}", a=between(1, 7), b=between(1, 20), c=between(1, 30), e=between(1, 200)),
            enzymes,
            fmt("EC {a}.{b}.{c}.-", a=between(1, 7), b=between(1, 20), c=between(1, 30)),
        ),
        "outline-number": one_of(
            fmt(
                "Step {a}.{b}.{c}.{e} – remove the cover",
                a=between(1, 9),
                b=between(1, 9),
                c=between(1, 9),
                e=between(1, 9),
            ),
            fmt("WBS {a}.{b}.{c}.{e}", a=between(1, 5), b=between(1, 9), c=between(1, 12), e=between(1, 20)),
            fmt("cf. {a}.{b}.{c} above", a=between(1, 12), b=between(1, 9), c=between(1, 9)),
            fmt(
                "requirement {a}.{b}.{c}.{e}.{f}",
                a=between(1, 9),
                b=between(1, 9),
                c=between(1, 9),
                e=between(1, 9),
                f=between(1, 9),
            ),
        ),
        "oid": one_of(
            pick(
                "sha256WithRSAEncryption (1.2.840.113549.1.1.11)",
                "rsaEncryption (1.2.840.113549.1.1.1)",
                "id-ecPublicKey (1.2.840.10045.2.1)",
                "prime256v1 (1.2.840.10045.3.1.7)",
            ),
            fmt("urn:oid:2.16.840.1.113883.{a}.{b}", a=between(1, 20), b=between(1, 300)),
            fmt(
                "X509v3 {x}",
                x=pick(
                    "Subject Alternative Name (2.5.29.17)",
                    "Key Usage (2.5.29.15)",
                    "Basic Constraints (2.5.29.19)",
                    "CRL Distribution Points (2.5.29.31)",
                    "Certificate Policies (2.5.29.32)",
                    "Extended Key Usage (2.5.29.37)",
                ),
            ),
            fmt(
                "id-kp {x}", x=pick("1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2", "1.3.6.1.5.5.7.3.3", "1.3.6.1.5.5.7.3.8")
            ),
        ),
        "date-time-dotted": one_of(
            fmt(
                "{y}. {m}. {d}. 오후 {h}:{mi}",
                y=between(2015, 2024),
                m=between(1, 12),
                d=between(1, 28),
                h=between(1, 11),
                mi=between(10, 59),
            ),
            fmt(
                "{d}.{m}.{y} klo {h}.{mi}",
                d=between(1, 28),
                m=between(1, 12),
                y=between(2015, 2024),
                h=between(7, 22),
                mi=between(10, 59),
            ),
            fmt("{d}.{m}.{y} г.", d=day, m=month, y=between(1995, 2024)),
            fmt(
                "{d}.{m}.{y}, {h}:{mi}:{s}",
                d=day,
                m=month,
                y=between(2010, 2024),
                h=padded(0, 23, 2),
                mi=padded(0, 59, 2),
                s=padded(0, 59, 2),
            ),
        ),
        "classification-number": one_of(
            fmt("UDC {a}.{b}.{c}", a=padded(4, 699, 3), b=between(1, 999), c=between(1, 9)),
            fmt("DDC {a}.{b}", a=padded(1, 999, 3), b=between(1, 999)),
            fmt("QA76.{a}.P{b} {y}", a=between(5, 99), b=between(10, 99), y=between(1995, 2024)),
            fmt("tariff item {a}.{b}.00.{c}", a=between(8401, 8548), b=between(10, 90), c=between(10, 90)),
        ),
        "sports-stat": one_of(
            fmt("slash line .{a}/.{b}/.{c}", a=between(200, 340), b=between(280, 450), c=between(350, 650)),
            fmt(
                "bowling figures of {o}-{m}-{r}-{w}",
                o=between(4, 10),
                m=between(0, 3),
                r=between(15, 70),
                w=between(0, 6),
            ),
            fmt(
                "rounds of {a}-{b}-{c}-{d}", a=between(64, 76), b=between(64, 76), c=between(64, 76), d=between(64, 76)
            ),
            fmt("split of 1:{a}.{b}", a=between(42, 59), b=padded(0, 99, 2)),
        ),
        "amount-dotted": one_of(
            fmt("Rp {a}.{b}.000.000", a=between(1, 9), b=padded(0, 950, 3)),
            fmt("{a}.{b}.000 đ", a=between(1, 99), b=padded(0, 950, 3)),
            fmt("CLP$ {a}.{b}", a=between(2, 99), b=padded(0, 990, 3)),
        ),
        "router-firmware": one_of(
            fmt(
                "NETGEAR {m} V1.0.{a}.{b}_{c}.{e}.{f}",
                m=pick("R7000", "R6400v2", "RAX50", "R8000"),
                a=between(9, 11),
                b=between(100, 220),
                c=between(1, 10),
                e=between(0, 9),
                f=between(1, 150),
            ),
            fmt("ASUSWRT 3.0.0.4.388_{a}", a=between(20000, 25999)),
            fmt("RouterOS 7.{a}.{b}", a=between(1, 16), b=between(1, 3)),
            fmt("OpenWrt 23.05.{a}", a=between(0, 5)),
        ),
        "address-pattern": one_of(  # a range or pattern written with wildcards: no one address
            fmt("anything in {a}.x.x", a=pick("10.0", "172.16", "192.168")),
            fmt("{a}.{b}.{c}.xxx", a=between(1, 223), b=between(0, 255), c=between(0, 255)),
            fmt("Deny from {a}.{b}.{c}.*", a=between(1, 223), b=between(0, 255), c=between(0, 255)),
        ),
        "ip-invalid": one_of(
            fmt("{a}.{b}.{c}.{e}", a=between(1, 223), b=between(0, 255), c=between(0, 255), e=between(256, 999)),
            fmt("{a}.{b}.{c}.{e}", a=between(1, 223), b=between(256, 999), c=between(0, 255), e=between(0, 255)),
            fmt(
                "ping: {a}.{b}.{c}.{e}: Name or service not known",
                a=between(1, 223),
                b=between(0, 255),
                c=between(256, 999),
                e=between(0, 255),
            ),
        ),
        "chem-registry": one_of(
            fmt("CAS {a}-{b}-{c}", a=between(50, 99999), b=between(10, 99), c=between(0, 9)),
            fmt("EC No. {a}-{b}-{c}", a=between(200, 310), b=padded(1, 999, 3), c=between(0, 9)),
            fmt("PubChem CID {a}", a=between(100, 99999999)),
            fmt("UN {a}", a=between(1001, 3550)),
        ),
    }


THIRD_HELD_OUT_LOOKALIKES = _third_held_out_lookalikes()


THIRD_HELD_OUT_MIX = HeldOutMix(  # mostly IPv4 addresses; the other kinds as in the second set
    "held-out-3",
    0.15,
    0.6,
    0.65,
    False,
    {**HELD_OUT_CONTEXTS, "phone": SECOND_HELD_OUT_CONTEXTS["phone"], "ipv4": THIRD_HELD_OUT_CONTEXTS["ipv4"]},
    SECOND_HELD_OUT_PHONE_FORMATS,
)
