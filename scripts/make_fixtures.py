#!/usr/bin/env python3
"""Write crawlbelt's own small fixture crawl, deterministically.

    python scripts/make_fixtures.py [OUT_DIR]        (default: tests/fixtures)

Writes OUT_DIR/warc/crawl-00000.warc.gz, crawl-00001.warc.gz (gzip, one member per record),
crawl-00002.warc (uncompressed) and OUT_DIR/expected.json, which describes every record in
(file name, offset) order: its type, URL and what the pipeline should conclude about it.

Nothing depends on the clock, the host or randomness: WARC-Date values are fixed, WARC-Record-IDs
are uuid5 values derived from a counter, and running the script twice gives byte-identical files.
(The gzip members come from zlib via warcio's writer, so a different zlib build could in principle
compress differently; the uncompressed content is identical regardless.)

Ground-truth definitions used in expected.json:
  * article text  = the <h1> title and the <p> paragraphs of the <article>, joined by blank lines;
  * exact duplicate = same article text after lower-casing and collapsing whitespace;
  * jaccard       = |A & B| / |A | B| over the sets of 5-word shingles, words being the
                    lower-cased whitespace tokens of the article text;
  * survivor      = the first page of a duplicate group in (file name, offset) order; every other
                    member names it in `duplicate_of`.
"""

from __future__ import annotations

import html
import io
import json
import re
import struct
import sys
import uuid
import zlib
from collections import Counter
from datetime import datetime, timedelta, UTC
from pathlib import Path
from typing import Any
from collections.abc import Sequence

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "fixtures"

BASE_DATE = datetime(2024, 3, 11, 9, 0, 0, tzinfo=UTC)
ID_NAMESPACE = uuid.UUID("6f1c2d3e-4a5b-5c6d-8e7f-0123456789ab")
USER_AGENT = "crawlbelt-fixture-bot/0.1 (+https://crawlbelt.example/bot)"
KINDS = (
    "clean",
    "exact_duplicate",
    "near_duplicate",
    "non_english",
    "junk",
    "not_html",
    "http_error",
    "malformed",
    "not_document",
)


def paras(block: str) -> list[str]:
    """Split a hard-wrapped block into paragraphs (blank-line separated, lines joined by spaces)."""
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", block.strip())]


# --------------------------------------------------------------------------------------------
# Clean English articles: key -> (site, path, title, paragraphs)
# --------------------------------------------------------------------------------------------
ARTICLES: dict[str, tuple[str, str, str, list[str]]] = {}


def article(key, site, path, title, body):
    ARTICLES[key] = (site, path, title, paras(body))


article(
    "canyon",
    "fieldnotebook",
    "/earth/2023/06/how-slot-canyons-are-carved",
    "How Slot Canyons Are Carved",
    """
Slot canyons are among the most dramatic landforms in the American Southwest, yet they begin with
something as ordinary as a crack in the rock. Most of them form in sandstone, a rock that is soft
enough to erode quickly but strong enough to hold a vertical wall for thousands of years.

The process starts when water finds a joint or fracture in the stone. During a summer storm, runoff
from a wide area of bare rock funnels into that weakness and rushes through it at high speed. The
water carries sand, gravel and sometimes boulders, and these act like sandpaper on the walls and
floor of the crack.

Because the flash floods are short and violent, they cut downward much faster than they widen the
channel. Over many centuries the crack deepens into a passage that can be more than thirty metres
deep and only a metre wide. The smooth, curving walls that photographers love are the record of
countless floods swirling through the narrows.

The same floods that shape the canyons also make them dangerous. A storm many kilometres away can
send a wall of water into a slot without any warning to hikers standing in sunshine. Rangers advise
visitors to check the forecast for the whole drainage basin, not just the sky overhead, and to leave
immediately if the water begins to rise or turns muddy.

Geologists study slot canyons to learn how quickly landscapes can change. Layers exposed in the
walls reveal ancient dunes, and the scoured floors show that erosion is rarely slow and steady.
Instead, it tends to happen in sudden bursts separated by long periods of quiet.
""",
)

article(
    "stock",
    "hearthandtable",
    "/recipes/basics/homemade-chicken-stock",
    "Why Homemade Stock Is Worth the Effort",
    """
A pot of stock simmering on the back of the stove is one of the quiet pleasures of a winter weekend.
It asks for very little attention, fills the house with a good smell, and turns scraps that would
otherwise be thrown away into the base of dozens of meals.

The most important ingredient is bones, ideally with some cartilage and a little meat still
attached. Chicken wings, backs and feet give a stock plenty of gelatin, which is what makes it set
like a loose jelly when it is cold. Roasting the bones first will deepen the colour and add a richer
flavour, although a pale stock is better for delicate soups.

Cover the bones with cold water and bring them slowly to a bare simmer. A hard boil will emulsify
the fat and leave the stock cloudy, so keep the heat low and skim off any foam that rises in the
first half hour. Add an onion, a carrot, a stick of celery and a few peppercorns, but leave out the
salt until you know how the stock will be used.

After three or four hours, strain everything through a fine sieve and let the liquid cool quickly.
Once it has chilled overnight, the fat will harden on the surface and can be lifted off in one
piece. The stock will keep for several days in the refrigerator or for months in the freezer,
portioned into containers that match the recipes you cook most often.
""",
)

article(
    "press",
    "longagoweekly",
    "/articles/printing-press-spread-europe",
    "How the Printing Press Spread Across Europe",
    """
When Johannes Gutenberg began printing in Mainz around 1450, he could not have guessed how quickly
his invention would travel. Within fifty years there were presses in more than two hundred European
towns, and millions of books had been produced.

Gutenberg's key innovation was not the press itself, which was adapted from machines used to make
wine and paper, but a system of movable metal type that could be cast accurately and in large
numbers. Combined with an oil-based ink that clung to metal, this made it possible to print clean
pages again and again.

The new technology followed the routes of trade. Printers trained in Mainz moved to Cologne, Basel,
Venice and Paris, often carrying their tools with them. Venice became a particular centre of the
trade, thanks to its wealthy merchants, its supply of paper and its network of ships that could
carry books to distant markets.

Early printers had to be business owners as well as craftsmen. Paper was expensive, and a print run
of a few hundred copies could ruin a workshop if the books did not sell. Many printers survived by
producing small, reliable jobs such as calendars, indulgences and school grammars between larger
projects.

Historians still debate how much the press changed European thought. What is clear is that it made
texts cheaper, more uniform and far easier to share, and that scholars, reformers and governments
were quick to understand its power.
""",
)

article(
    "jupiter",
    "fieldnotebook",
    "/space/2023/11/watching-jupiters-moons-with-binoculars",
    "Watching the Moons of Jupiter with Binoculars",
    """
You do not need a telescope to see one of the most important discoveries in the history of
astronomy. On a clear night, an ordinary pair of binoculars will show the four largest moons of
Jupiter as tiny points of light lined up beside the planet.

Galileo first saw these moons in January 1610, and he noticed that their positions changed from one
night to the next. He realised that they were circling Jupiter, which was strong evidence that not
everything in the sky revolved around the Earth. Today they are known as the Galilean moons: Io,
Europa, Ganymede and Callisto.

To find them, look for Jupiter first. It is usually the brightest object in the night sky after the
Moon and Venus, and it shines with a steady, creamy light rather than twinkling like a star. Brace
your binoculars against a fence post or a wall, because even a small tremor will make the moons hard
to separate from the glare of the planet.

Try to observe on several nights in a row and make a simple sketch each time. Io moves so quickly
that its position can change within a few hours, while Callisto takes more than two weeks to
complete one orbit. Sometimes one or two moons will be missing because they are passing in front of
Jupiter or hiding behind it.

Keeping a record like this is a small way of repeating Galileo's work. It is also a reminder that
the sky is not a fixed picture but a system in constant motion.
""",
)

article(
    "compost",
    "backyardalmanac",
    "/guides/a-beginners-guide-to-compost",
    "A Beginner's Guide to Compost",
    """
Compost is often described as black gold, and anyone who has spread it on a tired vegetable bed will
understand why. It improves the structure of both sandy and clay soils, feeds the creatures that
live underground, and helps the ground hold water during dry spells.

A good heap needs a balance of two kinds of material. Greens, such as grass clippings, vegetable
peelings and coffee grounds, are rich in nitrogen and break down quickly. Browns, such as dry leaves,
straw and shredded cardboard, provide carbon and keep the pile from turning into a slimy, smelly
mass. A rough rule is to add about two or three buckets of browns for every bucket of greens.

Moisture and air matter just as much as the ingredients. The pile should feel like a wrung-out
sponge, damp but not dripping. Turning it with a fork every couple of weeks lets oxygen reach the
microbes that do most of the work, and a well-managed heap can become warm enough to steam on a cold
morning.

Avoid adding meat, dairy and cooked food, which attract rats, and be careful with weeds that have
already set seed. Within six months to a year, depending on the weather and how often you turn it,
the material at the bottom of the heap will be dark, crumbly and ready to use.
""",
)

article(
    "terns",
    "fieldnotebook",
    "/life/2022/09/the-long-journey-of-the-arctic-tern",
    "The Long Journey of the Arctic Tern",
    """
The Arctic tern is a slender seabird that weighs a little over one hundred grams, yet it makes the
longest migration of any animal known to science. Each year it travels from its breeding grounds in
the far north to the edge of Antarctica and back again.

For a long time, the length of this journey was estimated from sightings and from rings attached to
the legs of chicks. When researchers began fitting terns with tiny geolocators, they discovered that
the birds do not fly in a straight line. Instead, they follow a winding route that takes advantage
of prevailing winds, and the average round trip turned out to be about seventy thousand kilometres.

The birds also stop to feed along the way. Large numbers gather in productive areas of the North
Atlantic, where they rest and build up fat before crossing toward the southern ocean. This strategy
costs time but saves energy, which matters for a bird that may live for thirty years.

Because the tern spends the northern summer in the Arctic and the southern summer near Antarctica,
it probably sees more daylight than any other creature. Over its lifetime, a single bird may fly a
distance equal to several trips to the Moon and back.
""",
)

article(
    "sourdough",
    "hearthandtable",
    "/baking/how-to-keep-a-sourdough-starter-alive",
    "How to Keep a Sourdough Starter Alive",
    """
A sourdough starter is simply flour and water that has been colonised by wild yeast and lactic acid
bacteria. It sounds fragile, but a healthy starter is remarkably tough, and many bakers keep the same
one going for years.

The key is regular feeding. Each time you feed the starter, discard most of it and mix the remainder
with fresh flour and water in roughly equal weights. This keeps the population of microbes active
and prevents the mixture from becoming too acidic. At warm room temperature, a starter kept on the
counter usually needs feeding once or twice a day.

If that schedule is too demanding, store the jar in the refrigerator. The cold slows fermentation
dramatically, and a starter can survive for a week or more between feedings. Take it out a day
before you plan to bake and give it two feedings to wake it up.

Learn to read the signs. A lively starter will roughly double in size a few hours after feeding and
will smell pleasantly sour, a little like yoghurt. A layer of grey liquid on top means it is hungry,
not dead; pour it off and feed it. Only pink or orange streaks are a real reason to throw the
starter away and begin again.
""",
)

article(
    "roads",
    "longagoweekly",
    "/articles/what-made-roman-roads-last",
    "What Made Roman Roads Last",
    """
Some of the roads built by the Roman army are still in use today, more than two thousand years after
the first stones were laid. At its height, the network stretched for roughly eighty thousand
kilometres of paved highway, linking Britain to Syria and the Rhine to North Africa.

Roman engineers began by surveying the route with simple instruments such as the groma, a pole with
plumb lines that allowed them to set out straight lines over long distances. Where possible, they
avoided steep climbs and marshy ground, although they were willing to cut through hills or build
causeways when a direct route mattered.

The road itself was built in layers. Workers dug a trench down to firm ground and filled it with
large stones, followed by smaller rubble, gravel and sometimes a layer of concrete. On important
roads, the surface was paved with tightly fitted blocks of hard stone. The centre was slightly
higher than the edges so that rain would run off into ditches on either side.

These roads were built for soldiers first, allowing legions to move quickly across the empire.
Merchants, officials and messengers soon followed, and the roads helped spread goods, coins,
language and law across a vast territory.
""",
)

article(
    "tides",
    "fieldnotebook",
    "/earth/2023/08/why-the-sea-has-two-tides-a-day",
    "Why the Sea Has Two Tides a Day",
    """
Anyone who spends a day at the coast will notice that the sea creeps up the beach and then retreats
again. In most places this happens twice a day, with high tides arriving about fifty minutes later
each day than the day before.

The main cause is the gravity of the Moon. The side of the Earth facing the Moon is pulled slightly
more strongly than the centre of the planet, and the water there bulges toward it. On the opposite
side, the centre of the Earth is pulled more strongly than the far ocean, which leaves a second bulge
pointing away from the Moon.

As the Earth rotates, each stretch of coast passes through both bulges, which is why there are
usually two high tides and two low tides. Because the Moon is also moving along its orbit, the Earth
has to turn a little further each day to catch up with it, and that explains the daily delay.

The Sun has an effect too, although it is less than half as strong. When the Sun and Moon line up at
new moon and full moon, their pulls combine to produce spring tides with an especially large range.
At the quarter moons they work against each other, and the difference between high and low water is
smaller.

Local geography can change the picture dramatically. In a narrow bay the rising water can be
funnelled into a range of many metres, while some enclosed seas hardly have a tide at all.
""",
)

article(
    "sky",
    "curiousminds",
    "/explainers/why-is-the-sky-blue",
    "Why Is the Sky Blue?",
    """
It is one of the first questions children ask, and the answer involves a surprising amount of
physics. Sunlight looks white, but it is really a mixture of every colour of the rainbow, each with a
different wavelength.

As sunlight passes through the atmosphere, it meets countless molecules of nitrogen and oxygen. These
molecules are much smaller than the wavelength of visible light, and they scatter short wavelengths
far more strongly than long ones. This effect is called Rayleigh scattering, after the British
physicist who described it in the nineteenth century.

Blue light has a short wavelength, so it is scattered in every direction across the sky. Wherever
you look, some of that scattered blue light reaches your eyes, which is why the whole dome above you
appears blue rather than just the area around the Sun.

Violet light is scattered even more, so why is the sky not violet? Part of the reason is that
sunlight contains less violet than blue, and some of it is absorbed high in the atmosphere. Our eyes
are also more sensitive to blue, and the brain blends the mixture into the familiar colour we see.

At sunset, light has to travel through a much thicker layer of air to reach us. By the time it
arrives, most of the blue has been scattered away, leaving the reds and oranges that make evening
skies so striking.
""",
)

article(
    "bees",
    "backyardalmanac",
    "/wildlife/how-honeybees-survive-the-winter",
    "How Honeybees Survive the Winter",
    """
Unlike wasps and bumblebees, which leave only a few mated queens to survive the cold months, a
honeybee colony stays alive through the entire winter. It manages this with stored honey and a
remarkable piece of group behaviour known as the winter cluster.

When the temperature inside the hive falls below about fourteen degrees Celsius, the bees gather into
a tight ball around the queen. The bees on the outside form an insulating shell, with their heads
pointing inward, while those in the centre generate heat by shivering their flight muscles without
moving their wings. The core of the cluster can stay above thirty degrees even when there is frost on
the hive roof.

The bees slowly rotate between the cold outer layer and the warm centre, and the whole cluster creeps
across the combs to stay in contact with its food. A strong colony can eat twenty kilograms of honey
or more before spring, so beekeepers must leave enough stores in the autumn.

On mild, sunny days, the bees break the cluster and fly out briefly to relieve themselves, since they
will not soil the inside of the hive. Seeing a few bees at the entrance in January is a good sign
that the colony is still alive.
""",
)

article(
    "fungi",
    "curiousminds",
    "/explainers/the-hidden-partnership-between-fungi-and-trees",
    "The Hidden Partnership Between Fungi and Trees",
    """
Walk through a forest and you will see trunks, leaves and perhaps a few mushrooms. What you will not
see is the vast network of fungal threads that runs through the soil beneath your feet, connecting
the roots of many of the trees around you.

These relationships are called mycorrhizae, from the Greek words for fungus and root. The fungus
wraps around or grows into the fine roots of a plant and extends thin filaments, known as hyphae, far
out into the soil. Because the hyphae are so much thinner than roots, they can reach water and
nutrients such as phosphorus that the tree could never reach on its own.

In return, the tree supplies the fungus with sugars made through photosynthesis. Estimates vary, but
some trees may pass a significant share of the carbon they fix to their fungal partners. It is a
trade that benefits both sides, and most land plants take part in some version of it.

Popular articles sometimes describe these networks as a wood wide web through which trees share food
and warnings. Researchers are more cautious. There is good evidence that fungi link different plants,
but how much material actually moves between trees, and whether that movement helps them, is still
being studied.
""",
)

article(
    "gothic",
    "longagoweekly",
    "/articles/flying-buttress-gothic-cathedrals",
    "The Flying Buttress and the Rise of Gothic Cathedrals",
    """
In the twelfth century, builders in northern France began to raise churches that seemed to defy the
weight of stone. Their walls were thinner, their windows were larger, and their vaults climbed to
heights that earlier masons would not have dared to attempt.

The secret lay in how the weight of the roof was carried to the ground. A stone vault pushes outward
as well as downward, and in older Romanesque churches that outward thrust was resisted by massive
walls with small openings. Gothic builders used pointed arches, which direct more of the load
downward, and they added flying buttresses on the outside of the building.

A flying buttress is a half arch that springs from a tall pier standing away from the wall. It
catches the sideways push of the vault high up and carries it down through the pier to the
foundations. With the walls relieved of much of their structural work, they could be opened up for
enormous windows filled with stained glass.

The results can still be seen at Chartres, Amiens and many other cathedrals. Inside, visitors
experience a tall, luminous space; outside, the buttresses form a forest of stone that reveals
exactly how the building stands.
""",
)

article(
    "chisel",
    "hearthandtable",
    "/workshop/sharpening-a-chisel-by-hand",
    "Sharpening a Chisel by Hand",
    """
A sharp chisel slices cleanly through end grain and leaves a surface that needs no sanding. A dull
one crushes the wood fibres, wanders off the line and makes every job harder and more dangerous.
Learning to sharpen by hand is one of the most useful skills a woodworker can develop.

Start by flattening the back of the blade. Only the first few centimetres behind the cutting edge
matter, but that area must be truly flat and polished, because the edge is formed where the back
meets the bevel. Work it on a coarse stone until the scratch pattern is even, then move to finer
stones.

Next, hone the bevel. Many people use a simple honing guide to hold the blade at a consistent angle,
usually around twenty-five to thirty degrees. Push the chisel along the stone with light, even
pressure until you can feel a tiny burr along the back of the edge. Repeat on each finer stone, and
then remove the burr with a few strokes on the flat back.

Test the edge by paring a thin shaving from the end of a piece of softwood. If it leaves a glassy
surface, the chisel is ready. A few strokes on the finest stone every so often will keep it that way
for a long time.
""",
)

article(
    "storm",
    "curiousminds",
    "/explainers/how-a-thunderstorm-is-born",
    "How a Thunderstorm Is Born",
    """
A summer afternoon can change quickly. A sky that was clear at noon may fill with towering clouds by
three o'clock, and by evening there can be thunder, heavy rain and even hail. Behind this drama is a
simple ingredient: warm, moist air that rises.

On a hot day, the ground heats the air just above it. That air becomes lighter than its surroundings
and begins to rise, cooling as it climbs. Eventually the water vapour it carries condenses into
droplets, forming a cumulus cloud. Condensation releases heat, which keeps the rising air warmer than
the air around it and drives it even higher.

If the atmosphere is unstable enough, the cloud can grow more than ten kilometres tall. Near the top,
water freezes into ice crystals and soft hail, and collisions between these particles separate
electric charges. When the difference in charge becomes large enough, it is released as lightning,
and the sudden heating of the air produces the shock wave we hear as thunder.

Most storms last less than an hour. As rain falls, it drags cool air down with it, and this downdraft
eventually cuts off the supply of warm air that fed the storm. The same gust of cool air, spreading
out along the ground, can trigger new storms nearby.
""",
)

article(
    "chain",
    "backyardalmanac",
    "/outdoors/looking-after-your-bicycle-chain",
    "Looking After Your Bicycle Chain",
    """
The chain is the hardest-working part of a bicycle, and it is also the part most often neglected. A
dirty, dry chain wastes energy, makes gear changes sluggish and wears out the expensive cogs and
chainrings it runs over.

Cleaning does not have to be complicated. Wipe the chain with a rag after wet or muddy rides, holding
the cloth around the lower run of chain while you turn the pedals backwards. Every few weeks, use a
brush and a mild degreaser to remove the grit that collects between the links, then rinse and let it
dry completely.

Once the chain is clean, apply a small drop of lubricant to each roller on the inside of the chain.
Turn the pedals for a minute so that the oil can work into the pins, and then wipe off the excess
from the outside. Too much oil attracts dirt and turns into a black paste that does more harm than
good.

Chains also stretch as their pins and rollers wear. A cheap checking tool will show when a chain has
reached the point where it should be replaced. Changing it in time costs far less than replacing a
full set of worn gears.
""",
)

article(
    "coffee",
    "hearthandtable",
    "/drinks/better-pour-over-coffee",
    "Getting Better Results from Pour-Over Coffee",
    """
Pour-over brewing has a reputation for being fussy, but the method is really about controlling a few
simple variables. Once you understand them, it becomes easy to make a cup that tastes clean, sweet
and balanced.

Begin with the ratio of coffee to water. A good starting point is sixty grams of coffee per litre,
which works out at about fifteen grams for a single large mug. Weigh both the beans and the water if
you can, because scoops and cups are surprisingly inaccurate.

Grind size matters next. If the water drains through in less than two minutes and the coffee tastes
sour or thin, grind finer. If it takes much longer than four minutes and tastes bitter or dry, grind
coarser. Change only one thing at a time so that you can tell which adjustment made the difference.

Heat the water to just below boiling and pour a small amount over the grounds first, enough to wet
them evenly. Wait about thirty seconds while the coffee releases gas and swells, then pour the rest
in slow circles. Fresh beans, roasted within the last few weeks, will reward this care far more than
old ones.
""",
)

article(
    "lava",
    "fieldnotebook",
    "/earth/2024/01/reading-the-shapes-of-lava",
    "Reading the Shapes of Lava",
    """
Lava does not always look the same when it cools, and volcanologists have borrowed two Hawaiian words
to describe the most common forms. Pahoehoe has a smooth, ropy surface, while aa is rough, jagged and
broken into sharp clinkers.

Both types can come from the same eruption, and even from the same flow. The difference depends
mainly on how hot and fluid the lava is and how quickly it is moving. Pahoehoe forms when the lava is
very hot and flows gently, allowing a thin skin to form on the surface and wrinkle into folds as the
molten rock moves beneath it.

As the lava cools, loses gas and becomes stickier, or as it is stirred by flowing down a steep slope,
the skin can no longer stretch. It tears apart into blocks and spiky fragments, and the flow turns
into aa. The change usually goes in only one direction, so aa does not turn back into pahoehoe.

Walking across the two surfaces makes the difference obvious. Old pahoehoe can be crossed in ordinary
shoes, but aa will quickly shred boots and skin. Reading these textures helps geologists reconstruct
how past eruptions behaved and where future flows might travel.
""",
)

article(
    "alexandria",
    "longagoweekly",
    "/articles/real-story-library-of-alexandria",
    "The Real Story of the Library of Alexandria",
    """
The Library of Alexandria is often imagined as a single grand building that vanished in one
catastrophic fire, taking the knowledge of the ancient world with it. The real story is longer, less
dramatic and in some ways more interesting.

The library was founded in the early third century before the common era under the Ptolemies, the
Greek dynasty that ruled Egypt after Alexander the Great. It was part of a larger research
institution called the Museum, where scholars were paid to study, write and edit texts. Agents were
sent to buy books across the Mediterranean, and ships arriving in the harbour were reportedly
searched for scrolls that could be copied.

Several events damaged the collection. Julius Caesar's troops set fires in the harbour in 48 BCE, and
some scrolls were probably lost. Later, political purges drove scholars away, and the city suffered
during wars in the third century. By the time of the later stories about its destruction, the
library had likely already declined.

Its decline reminds us that knowledge is lost less often through a single disaster than through
neglect, lack of funding and the slow decay of institutions.
""",
)

article(
    "mercator",
    "curiousminds",
    "/explainers/why-greenland-looks-so-big",
    "Why Greenland Looks So Big on Your Map",
    """
On many wall maps, Greenland appears roughly the same size as Africa. In reality, Africa is about
fourteen times larger. The distortion is not a mistake but a consequence of the Mercator projection,
one of the most famous maps ever made.

Gerardus Mercator published his projection in 1569 for navigators. Its great advantage is that a line
of constant compass bearing appears as a straight line on the map. A sailor could draw a line between
two ports, measure its angle and follow that heading across the ocean.

To achieve this, Mercator had to stretch the map north and south as the distance from the equator
increased. Near the equator the stretching is small, but near the poles it becomes enormous.
Countries at high latitudes, such as Canada, Russia and Greenland, therefore look much larger than
they really are.

Every flat map of the round Earth distorts something, whether area, shape, distance or direction.
Other projections keep areas correct at the cost of squashed shapes. The best choice depends on what
the map is for, which is why a globe remains the most honest picture of the planet.
""",
)

article(
    "loanwords",
    "curiousminds",
    "/explainers/how-languages-borrow-words",
    "How Languages Borrow Words",
    """
English speakers who order a croissant, practise yoga and relax on a patio are using words that came
from French, Sanskrit and Spanish. Borrowing is one of the most common ways that languages change,
and no language is entirely free of it.

Words usually travel along with the things or ideas they describe. When a new food, tool or custom
arrives from another culture, it is often easier to adopt the existing name than to invent a new
one. Trade, conquest, religion and science have all been powerful channels for this kind of
exchange.

Once a word is borrowed, it starts to adapt to its new home. Its pronunciation shifts toward the
sounds of the borrowing language, its spelling may change, and it begins to take local endings. Over
time, speakers may forget that the word was ever foreign.

Borrowing can also reveal history. The large number of Norman French words in English for food, law
and government reflects the period after 1066 when French speakers held power in England. In the
same way, the vocabulary of a language can preserve traces of contacts that were never written down.
""",
)

article(
    "clock",
    "fieldnotebook",
    "/life/2023/04/the-body-clock-and-jet-lag",
    "The Body Clock and Why Jet Lag Hurts",
    """
Almost every cell in the human body keeps time. Tiny molecular clocks, driven by genes that switch
each other on and off in a cycle of roughly twenty-four hours, tell our organs when to be active and
when to rest.

These clocks are coordinated by a small cluster of nerve cells in the brain, just above the point
where the optic nerves cross. This master clock receives signals directly from the eyes, and light,
especially bright morning light, is the main cue it uses to stay aligned with the day outside.

When you fly across several time zones, the outside day suddenly shifts but your internal clocks do
not. For a few days, your brain may be telling you to sleep while the local clock says it is
lunchtime, and your digestion may be working on a different schedule from your mind. This mismatch
is what we experience as jet lag.

The body usually adjusts by about one hour per day. Getting outside in daylight at the right time,
eating meals on local time and avoiding long naps can all help the internal clocks catch up more
quickly.
""",
)

# The page whose gzip member gets corrupted (its text never reaches the pipeline).
article(
    "tea",
    "hearthandtable",
    "/drinks/from-leaf-to-cup-how-tea-is-processed",
    "From Leaf to Cup: How Tea Is Processed",
    """
All true tea comes from a single plant, Camellia sinensis, yet green, black, oolong and white teas
taste very different. The difference lies almost entirely in what happens to the leaves after they
are picked.

Freshly plucked leaves begin to wilt and oxidise as soon as they are cut from the bush. For green
tea, producers stop this process quickly by heating the leaves, either by steaming them, as is common
in Japan, or by tossing them in hot pans, as in much of China. The heat preserves the fresh, grassy
character of the leaf.

Black tea is made by doing the opposite. The leaves are withered, rolled to break their cell walls
and then left to oxidise fully, which turns them dark and develops malty, rich flavours. Oolong sits
between the two, with the leaves partly oxidised and often shaped into tight balls or long twists.
""",
)

# Near-duplicate edits: (original key, [(old sentence, new sentence or old+appended)])
NEAR_EDITS = {
    "jupiter": [
        (
            "Brace your binoculars against a fence post or a wall, because even a small tremor will make "
            "the moons hard to separate from the glare of the planet.",
            "A small tripod adapter is worth buying, because holding binoculars steady by hand for more "
            "than a minute is surprisingly difficult.",
        )
    ],
    "compost": [
        (
            "the material at the bottom of the heap will be dark, crumbly and ready to use.",
            "the material at the bottom of the heap will be dark, crumbly and ready to use. Readers in "
            "cold climates often ask whether the heap can be left alone over winter, and the answer is "
            "yes: it will simply rest until spring.",
        )
    ],
    "tides": [
        (
            "The Sun has an effect too, although it is less than half as strong.",
            "The Sun matters too, although its pull is less than half as strong.",
        ),
        (
            "In a narrow bay the rising water can be funnelled into a range of many metres,",
            "In the Bay of Fundy the rising water is funnelled into a range of over fifteen metres,",
        ),
    ],
}

# --------------------------------------------------------------------------------------------
# Non-English pages: key -> (site, path, lang, charset, title, paragraphs)
# --------------------------------------------------------------------------------------------
FOREIGN = {
    "fr": (
        "carnetgourmand",
        "/recettes/les-secrets-du-pain-de-campagne",
        "fr",
        "utf-8",
        "Les secrets du pain de campagne",
        paras("""
Le pain de campagne occupe une place particulière dans la cuisine française. Autrefois, les familles
rurales cuisaient de grosses miches une fois par semaine dans le four du village, et ce pain devait
se conserver plusieurs jours sans durcir. Sa croûte épaisse et sa mie dense, légèrement acide,
viennent d'une longue fermentation au levain naturel.

Pour réussir un bon pain de campagne à la maison, il faut surtout de la patience. La pâte, composée
de farine de blé, d'un peu de farine de seigle, d'eau et de sel, doit reposer pendant de longues
heures. Pendant ce temps, les levures et les bactéries développent les arômes et donnent au pain sa
texture si caractéristique. Une cuisson dans une cocotte en fonte bien chaude permet enfin d'obtenir
une croûte dorée et croustillante, presque comme celle des boulangers.
"""),
    ),
    "de": (
        "wanderfreunde",
        "/touren/herbstwandern-im-schwarzwald",
        "de",
        "utf-8",
        "Herbstwandern im Schwarzwald",
        paras("""
Der Schwarzwald gehört zu den beliebtesten Wandergebieten in Deutschland, und besonders im Herbst
zeigt er sich von seiner schönsten Seite. Wenn sich die Buchen und Ahornbäume gelb und rot färben,
leuchten die Hänge zwischen den dunklen Tannen, und über den Tälern liegt am Morgen oft ein dichter
Nebel.

Viele Wege führen an alten Bauernhöfen, kleinen Mühlen und rauschenden Bächen vorbei. Wer früh
aufbricht, kann auf den Höhen des Feldbergs oder des Belchens bei klarem Wetter bis zu den Alpen
blicken. Unterwegs laden Hütten und Gasthäuser zu einer Rast ein, wo man eine kräftige Suppe oder ein
Stück Schwarzwälder Kirschtorte genießen kann. Wichtig sind gutes Schuhwerk und warme Kleidung, denn
das Wetter in den Bergen kann schnell umschlagen, und die Tage werden im Oktober spürbar kürzer.
"""),
    ),
    "es": (
        "historiasdesabor",
        "/articulos/la-historia-del-chocolate",
        "es",
        "utf-8",
        "La historia del chocolate",
        paras("""
Mucho antes de convertirse en una golosina, el chocolate era una bebida sagrada en Mesoamérica. Los
mayas y los aztecas tostaban y molían las semillas de cacao, las mezclaban con agua, chile y especias,
y las batían hasta obtener una espuma amarga que se servía en ceremonias y banquetes. Las semillas
eran tan valiosas que incluso se usaban como moneda.

Cuando los españoles llegaron a América en el siglo dieciséis, llevaron el cacao a Europa. Allí se le
añadió azúcar y canela, y la bebida se puso de moda entre la nobleza. Con el paso del tiempo, los
avances técnicos del siglo diecinueve permitieron fabricar chocolate sólido a gran escala, y lo que
había sido un lujo de reyes terminó al alcance de casi todo el mundo.
"""),
    ),
    "ru": (
        "zelenydom",
        "/sovety/uhod-za-komnatnymi-rasteniyami-zimoy",
        "ru",
        "utf-8",
        "Как ухаживать за комнатными растениями зимой",
        paras("""
Зима — непростое время для комнатных растений. Световой день становится коротким, батареи
пересушивают воздух, а на подоконниках бывает холодно из-за сквозняков. Поэтому уход за цветами в
этот период нужно заметно изменить.

Прежде всего сократите полив. Большинство растений зимой растут медленно и потребляют гораздо меньше
воды, а лишняя влага в холодной почве приводит к загниванию корней. Перед поливом проверьте землю
пальцем: если она влажная на глубине двух-трёх сантиметров, лучше подождать. Подкормки в это время
обычно не нужны.

Чтобы растениям хватало света, переставьте их ближе к южным или восточным окнам, а при необходимости
используйте специальные лампы. Сухой воздух можно увлажнить, поставив рядом с горшками поддоны с
мокрой галькой. Весной, когда дни станут длиннее, растения снова начнут активно расти.
"""),
    ),
    "ru1251": (
        "puteshestviya",
        "/stati/istoriya-transsiba",
        "ru",
        "windows-1251",
        "История Транссибирской магистрали",
        paras("""
Транссибирская магистраль — самая длинная железная дорога в мире. Её протяжённость от Москвы до
Владивостока превышает девять тысяч километров, а поезд проходит этот путь почти за неделю,
пересекая восемь часовых поясов.

Строительство началось в 1891 году и велось одновременно с нескольких сторон. Рабочим приходилось
прокладывать путь через тайгу, болота и вечную мерзлоту, строить мосты через широкие сибирские реки
и тоннели в горах вокруг Байкала. Значительная часть работ выполнялась вручную, с помощью лопат,
тачек и лошадей.

Магистраль изменила жизнь огромного региона. Вдоль дороги выросли новые города, в Сибирь потянулись
переселенцы, а товары стали быстрее попадать из восточных областей страны в центральные. И сегодня
по этим путям идут пассажирские и грузовые поезда, а путешествие по Транссибу остаётся мечтой многих
туристов.
"""),
    ),
}

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


# --------------------------------------------------------------------------------------------
# Text measures (ground truth) and a Gopher-rules sanity check of the fixture's own texts
# --------------------------------------------------------------------------------------------
def norm(text: str) -> str:
    return " ".join(text.lower().split())


def shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    w = text.lower().split()
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


STOP_WORDS = {"the", "be", "to", "of", "and", "that", "have", "with"}
BULLETS = ("\u2022", "\u2023", "\u25b6", "\u25cf", "\u25e6", "\u25a0", "\u25a1", "\u25aa", "\u25ab", "\u2013", "-", "*")


def gopher_failures(text: str) -> list[str]:
    """The Gopher (Rae et al. 2021) quality and repetition rules; returns the rules that fire."""
    fails = []
    words = text.split()
    n = len(words)
    if not 50 <= n <= 100_000:
        fails.append("word_count")
    if n:
        mean = sum(len(w) for w in words) / n
        if not 3 <= mean <= 10:
            fails.append("mean_word_length")
        if (text.count("#") + text.count("...") + text.count("\u2026")) / n > 0.1:
            fails.append("symbol_ratio")
        if sum(any(c.isalpha() for c in w) for w in words) / n < 0.8:
            fails.append("alpha_words")
        if sum(w.lower().strip(".,;:!?") in STOP_WORDS for w in words) < 2:
            fails.append("stop_words")
    lines = [line for line in text.split("\n") if line.strip()]
    if lines:
        if sum(line.lstrip().startswith(BULLETS) for line in lines) / len(lines) > 0.9:
            fails.append("bullet_lines")
        if sum(line.rstrip().endswith(("...", "\u2026")) for line in lines) / len(lines) > 0.3:
            fails.append("ellipsis_lines")
    # repetition
    total_chars = max(1, len(text))
    for unit, parts, fthr, cthr in (
        ("line", lines, 0.3, 0.2),
        ("paragraph", [p for p in re.split(r"\n{2,}", text) if p.strip()], 0.3, 0.2),
    ):
        seen, dup, dup_chars = set(), 0, 0
        for p in parts:
            if p in seen:
                dup += 1
                dup_chars += len(p)
            seen.add(p)
        if parts and (dup / len(parts) > fthr or dup_chars / total_chars > cthr):
            fails.append(f"dup_{unit}")
    lw = [w.lower() for w in words]
    wchars = max(1, sum(len(w) for w in lw))
    for k, thr in ((2, 0.20), (3, 0.18), (4, 0.16)):
        grams = Counter(tuple(lw[i : i + k]) for i in range(len(lw) - k + 1))
        if grams:
            g, c = grams.most_common(1)[0]
            if c > 1 and sum(len(x) for x in g) * c / wchars > thr:
                fails.append(f"top_{k}gram")
    for k, thr in zip(range(5, 11), (0.15, 0.14, 0.13, 0.12, 0.11, 0.10)):
        grams = Counter(tuple(lw[i : i + k]) for i in range(len(lw) - k + 1))
        covered = [False] * len(lw)
        for i in range(len(lw) - k + 1):
            if grams[tuple(lw[i : i + k])] > 1:
                for j in range(i, i + k):
                    covered[j] = True
        if sum(len(w) for w, c in zip(lw, covered) if c) / wchars > thr:
            fails.append(f"dup_{k}gram")
    return fails


# --------------------------------------------------------------------------------------------
# The crawl plan
# --------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------
class Counters:
    def __init__(self):
        self.n = 0

    def next(self) -> tuple[str, str]:
        """A fixed (WARC-Record-ID, WARC-Date) pair for the next record."""
        self.n += 1
        rid = f"<urn:uuid:{uuid.uuid5(ID_NAMESPACE, f'crawlbelt-fixture-record-{self.n}')}>"
        return rid, self.warc_date(self.n)

    @staticmethod
    def warc_date(n: int) -> str:
        return (BASE_DATE + timedelta(seconds=17 * n)).strftime("%Y-%m-%dT%H:%M:%SZ")


def http_date(warc_date: str) -> str:
    dt = datetime.strptime(warc_date, "%Y-%m-%dT%H:%M:%SZ")
    return dt.strftime("%a, %d %b %Y %H:%M:%S GMT")


def split_url(url: str) -> tuple[str, str]:
    rest = url.split("://", 1)[1]
    host, _, path = rest.partition("/")
    return host, "/" + path


def ip_for(host: str) -> str:
    return f"192.0.2.{sum(host.encode()) % 250 + 1}"


def write_all(out_dir: Path) -> dict:
    warc_dir = out_dir / "warc"
    warc_dir.mkdir(parents=True, exist_ok=True)
    ids = Counters()
    records: list[dict] = []
    files_meta = []
    seen_responses: dict[str, dict] = {}  # url -> {"id","date","digest","http"}
    malformed_at = None

    for fname, gz, items in plan():
        buf = io.BytesIO()
        writer = WARCWriter(buf, gzip=gz)
        file_records: list[dict] = []

        def emit(rec, entry):
            start = buf.tell()
            writer.write_record(rec)
            entry = dict(file=fname, offset=start, length=buf.tell() - start, **entry)
            file_records.append(entry)
            return entry

        info_id, info_date = ids.next()
        info = (
            b"software: crawlbelt scripts/make_fixtures.py\r\n"
            b"format: WARC File Format 1.0\r\n"
            b"conformsTo: http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf\r\n"
            b"isPartOf: crawlbelt-fixture-crawl\r\n"
            b"description: Small hand-built crawl used by crawlbelt's tests\r\n"
            b"robots: obey\r\n" + f"http-header-user-agent: {USER_AGENT}\r\n".encode()
        )
        rec = writer.create_warc_record(
            "",
            "warcinfo",
            payload=io.BytesIO(info),
            length=len(info),
            warc_headers_dict={"WARC-Record-ID": info_id, "WARC-Date": info_date, "WARC-Filename": fname},
        )
        emit(rec, dict(record_type="warcinfo", url=None, kind="not_document"))

        page_ids: list[tuple[str, str, str]] = []  # (response id, date, url) per page, for metadata
        for item in items:
            itype = item.get("type", "page")
            if itype == "metadata":
                resp_id, resp_date, url = page_ids[item["of"]]
                mid, _ = ids.next()
                host, _ = split_url(url)
                payload = (
                    f"via: https://{host}/\r\nhopsFromSeed: L\r\n"
                    f"fetchTimeMs: {180 + 37 * len(records) % 400}\r\n"
                    f"outlink: https://{host}/about L a/@href\r\n"
                    f"outlink: https://{host}/privacy L a/@href\r\n"
                ).encode()
                rec = writer.create_warc_record(
                    url,
                    "metadata",
                    payload=io.BytesIO(payload),
                    length=len(payload),
                    warc_headers_dict={
                        "WARC-Record-ID": mid,
                        "WARC-Date": resp_date,
                        "WARC-Concurrent-To": resp_id,
                        "WARC-Warcinfo-ID": info_id,
                    },
                )
                emit(rec, dict(record_type="metadata", url=url, kind="not_document"))
                continue

            url = item["url"]
            host, path = split_url(url)
            req_id, date = ids.next()
            resp_id, _ = ids.next()
            req_http = StatusAndHeaders(
                f"GET {path} HTTP/1.1",
                [
                    ("Host", host),
                    ("User-Agent", USER_AGENT),
                    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
                    ("Accept-Language", "en-US,en;q=0.5"),
                    ("Accept-Encoding", "identity"),
                    ("Connection", "close"),
                ],
                is_http_request=True,
            )
            req = writer.create_warc_record(
                url,
                "request",
                http_headers=req_http,
                warc_headers_dict={
                    "WARC-Record-ID": req_id,
                    "WARC-Date": date,
                    "WARC-Concurrent-To": resp_id,
                    "WARC-Warcinfo-ID": info_id,
                },
            )
            emit(req, dict(record_type="request", url=url, kind="not_document"))

            if itype == "revisit":
                orig = seen_responses[url]
                rec = writer.create_revisit_record(
                    url,
                    orig["digest"],
                    url,
                    orig["date"],
                    http_headers=StatusAndHeaders("200 OK", orig["http"], protocol="HTTP/1.1"),
                    warc_headers_dict={
                        "WARC-Record-ID": resp_id,
                        "WARC-Date": date,
                        "WARC-IP-Address": ip_for(host),
                        "WARC-Warcinfo-ID": info_id,
                        "WARC-Refers-To": orig["id"],
                    },
                )
                rec.http_headers.replace_header("Date", http_date(date))
                emit(
                    rec,
                    dict(
                        record_type="revisit",
                        url=url,
                        kind="not_document",
                        http_status=200,
                        refers_to_url=url,
                        refers_to_date=orig["date"],
                    ),
                )
                continue

            body = item["body"]
            code, reason = item.get("status", (200, "OK"))
            http_headers = [
                ("Date", http_date(date)),
                ("Server", "nginx"),
                ("Content-Type", item["content_type"]),
                ("Content-Length", str(len(body))),
                ("Last-Modified", "Fri, 01 Mar 2024 12:00:00 GMT"),
                ("Cache-Control", "max-age=600"),
                ("Connection", "close"),
            ]
            rec = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=StatusAndHeaders(f"{code} {reason}", list(http_headers), protocol="HTTP/1.1"),
                warc_headers_dict={
                    "WARC-Record-ID": resp_id,
                    "WARC-Date": date,
                    "WARC-IP-Address": ip_for(host),
                    "WARC-Warcinfo-ID": info_id,
                },
            )
            entry = dict(
                record_type="response",
                url=url,
                kind=item.get("kind"),
                http_status=code,
                content_type=item["content_type"],
            )
            if item.get("malformed"):
                entry["kind"] = "malformed"
            for k in ("lang", "junk_kind"):
                if k in item and entry["kind"] not in ("malformed",):
                    entry[k] = item[k]
            if "charset" in item and entry["kind"] != "malformed":
                entry["charset"] = item["charset"]
            entry = emit(rec, entry)
            entry["_item"] = item
            page_ids.append((resp_id, date, url))
            seen_responses[url] = dict(
                id=resp_id, date=date, http=http_headers, digest=rec.rec_headers.get_header("WARC-Payload-Digest")
            )

        data = bytearray(buf.getvalue())
        bad = [r for r in file_records if r.get("kind") == "malformed"]
        if bad:
            assert gz and len(bad) == 1
            r = bad[0]
            before = [(x["offset"], x["record_type"], x["url"]) for x in file_records if x["offset"] < r["offset"]]
            pos = corrupt_member(data, r["offset"], r["length"], before)
            r["corrupt_bytes_at"] = pos
            r["readable"] = False
            malformed_at = (fname, r["offset"])
        (warc_dir / fname).write_bytes(bytes(data))
        verify_members(bytes(data), file_records, gz)
        if not bad:
            assert warcio_reading(bytes(data)) == (
                [(x["offset"], x["record_type"], x["url"]) for x in file_records],
                None,
            )
        files_meta.append(dict(name=fname, gzip=gz, records=len(file_records), bytes=len(data)))
        records.extend(file_records)

    assert malformed_at is not None
    label_documents(records)
    for r in records:
        r.pop("_item", None)
    summary = {k: sum(r["kind"] == k for r in records) for k in KINDS}
    assert sum(summary.values()) == len(records)
    expected = dict(
        notes={
            "order": "records are listed in (file name, offset) order; offsets are the byte offset "
            "of the record (for .warc.gz, of its gzip member); length is its size in the file",
            "article_text": "the <h1> and <p> texts of the page's <article>, joined by blank lines",
            "exact_duplicate": "same article text after lower-casing and collapsing whitespace; "
            "duplicate_of names the first page of the group in (file, offset) order",
            "near_duplicate": "an edited copy of an earlier page; jaccard is the 5-word-shingle Jaccard "
            "of the lower-cased whitespace tokens of the two article texts",
            "malformed": "the gzip member at this offset is corrupted (corrupt_bytes_at is the absolute "
            "offset of the overwritten bytes) so inflating it fails; plain warcio "
            "ArchiveIterator yields the records before it and then raises "
            "ArchiveLoadFailed; the records after it are intact and can be read by "
            "starting at their own offsets",
            "not_document": "warcinfo, request, metadata and revisit records",
        },
        files=files_meta,
        records=records,
        summary=summary,
    )
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return expected


def corrupt_member(data: bytearray, start: int, length: int, before: list[tuple]) -> int:
    """Overwrite 24 bytes of the member's deflate data, a little way past its 10-byte gzip header,
    so that inflating the member fails. The position is the first one (deterministic search) at
    which zlib fails on the member AND plain warcio's ArchiveIterator, reading the whole file,
    yields exactly the records before the member and then raises ArchiveLoadFailed.

    (Where the bad bytes sit matters to warcio: if the failing inflate call is not the first call
    for the member, e.g. when corruption lies past warcio's 16 KiB read block, warcio writes the
    zlib error to stderr and ends the iteration silently, dropping every later record.)"""
    pattern = bytes((0xFF, 0x00, 0xA5, 0x5A) * 6)
    for pos in range(start + 32, start + length - 32):
        trial = bytearray(data)
        trial[pos : pos + len(pattern)] = pattern
        try:
            zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(bytes(trial[start : start + length]))
            continue
        except zlib.error:
            pass
        if warcio_reading(bytes(trial)) == (before, "ArchiveLoadFailed"):
            data[pos : pos + len(pattern)] = pattern
            return pos
    raise RuntimeError("could not corrupt the member")


def warcio_reading(data: bytes) -> tuple[list[tuple], str | None]:
    """(offset, type, url) of each record plain warcio yields, and the exception that ended it."""
    from warcio.archiveiterator import ArchiveIterator

    got, err = [], None
    it = ArchiveIterator(io.BytesIO(data))
    try:
        for rec in it:
            rec.content_stream().read()
            got.append((it.get_record_offset(), rec.rec_type, rec.rec_headers.get_header("WARC-Target-URI")))
    except Exception as e:  # noqa: BLE001 - we report which one
        err = type(e).__name__
    return got, err


def verify_members(data: bytes, file_records: list[dict], gz: bool) -> None:
    """Every record other than the malformed one must parse on its own from its offset."""
    for r in file_records:
        chunk = data[r["offset"] : r["offset"] + r["length"]]
        if not gz:
            assert chunk.startswith(b"WARC/1.0\r\n")
            continue
        assert chunk[:3] == b"\x1f\x8b\x08"
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        if r["kind"] == "malformed":
            try:
                d.decompress(chunk)
            except zlib.error:
                continue
            raise AssertionError("corrupt member inflated")
        plain = d.decompress(chunk)
        assert d.eof and not d.unused_data and plain.startswith(b"WARC/1.0\r\n")


def label_documents(records: list[dict]) -> None:
    """Assign kinds to English article pages: clean / exact_duplicate / near_duplicate, with
    survivors chosen by (file name, offset) order; record jaccard and check the texts."""
    order = sorted(records, key=lambda r: (r["file"], r["offset"]))
    assert order == records
    pages = [r for r in records if "_item" in r and r["_item"].get("article_key") and r["kind"] != "malformed"]
    groups: dict[str, dict] = {}
    for r in pages:
        item = r["_item"]
        r["words"] = len(item["text"].split())
        if item.get("near_of"):
            continue
        g = norm(item["text"])
        if g in groups:
            first = groups[g]
            r["kind"] = "exact_duplicate"
            r["duplicate_of"] = first["url"]
            r["jaccard"] = round(jaccard(first["_item"]["text"], item["text"]), 4)
        else:
            groups[g] = r
            r["kind"] = "clean"
    survivors_by_key = {r["_item"]["article_key"]: r for r in groups.values()}
    for r in pages:
        item = r["_item"]
        if item.get("near_of"):
            orig = survivors_by_key[item["near_of"]]
            assert (orig["file"], orig["offset"]) < (r["file"], r["offset"])
            j = jaccard(orig["_item"]["text"], item["text"])
            assert 0.75 <= j <= 0.95, (r["url"], j)
            r["kind"] = "near_duplicate"
            r["duplicate_of"] = orig["url"]
            r["jaccard"] = round(j, 4)
        r["lang"] = "en"
        fails = gopher_failures(item["text"])
        assert not fails, (r["url"], fails)
        assert 150 <= r["words"] <= 400, (r["url"], r["words"])
    # distinct articles really are distinct; near duplicates resemble only their original
    survivors = list(groups.values())
    for i, a in enumerate(survivors):
        for b in survivors[i + 1 :]:
            assert jaccard(a["_item"]["text"], b["_item"]["text"]) < 0.1, (a["url"], b["url"])
    for r in pages:
        if r["kind"] == "near_duplicate":
            best = max(survivors, key=lambda s: jaccard(s["_item"]["text"], r["_item"]["text"]))
            assert best["url"] == r["duplicate_of"]
    # the other documents
    for r in records:
        item = r.get("_item")
        if not item:
            continue
        if r["kind"] == "non_english":
            assert len(item["text"].split()) >= 100, r["url"]
            r["words"] = len(item["text"].split())
        if r["kind"] == "junk":
            fails = gopher_failures(item["text"])
            want = {
                "spam": "symbol_ratio",
                "bullets": "bullet_lines",
                "repetition": "dup_line",
                "short": "word_count",
                "nav": "word_count",
            }[r["junk_kind"]]
            assert want in fails, (r["url"], fails)
    kinds = Counter(r["kind"] for r in records)
    assert kinds["exact_duplicate"] == 3 and kinds["near_duplicate"] == 3, kinds


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1 or (argv and argv[0] in ("-h", "--help")):
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    out_dir = Path(argv[0]) if argv else DEFAULT_OUT
    expected = write_all(out_dir)
    total = sum(f["bytes"] for f in expected["files"])
    print(f"wrote {len(expected['records'])} records in {len(expected['files'])} files ({total} bytes) to {out_dir}")
    print(json.dumps(expected["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
