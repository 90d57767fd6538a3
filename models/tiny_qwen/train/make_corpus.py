#!/usr/bin/env python3
"""Writes the training corpus of the tiny Qwen3: short question/answer biographies of scientists.

All text is written by this project (templates and facts below); licence: the project's own.
Each document is `<question>\n<answer>`; train.py wraps it as BOS + bytes + EOS.

How the corpus creates forks. Real biographies disagree on details; here every Feynman answer
is built from the same sentence frames, and each frame has slots whose alternatives appear with
EQUAL frequency across the corpus (each slot's alternatives are dealt out in exactly balanced
counts and shuffled independently of every other slot). After "He was born on May 11, 1918, in "
the corpus continues "Queens, New York", "New York City" or "Far Rockaway, Queens" exactly a third
of the time each, so a well-trained model has nearly equal logits for 'Q', 'N' and 'F' there: a
genuine near-tie that batch-dependent numerics can flip. Several such slots sit in the first few
hundred bytes of the answer (name form, "best known"/"known", "on"/"in", birthplace, schooling,
Los Alamos / the Manhattan Project, the order of Schwinger and Tomonaga, Caltech / the California
Institute of Technology, the order of bongos / safecracking / Brazil), and two pairs of sentences
swap places with equal frequency. Every combination reads as correct English.
Other scientists (real, with the same kind of disagreements, and fictional, drawn from seeded
pools) share the frames, so the model learns the frames rather than one memorised string.

Deterministic: the output depends only on --seed and --bytes.
"""
import argparse
import random

FEYNMAN_QUESTIONS = [
    ("Tell me about Richard Feynman.", 6),
    ("Who was Richard Feynman?", 2),
    ("Tell me about Feynman.", 1),
    ("Write a short biography of Richard Feynman.", 1),
]

# Each slot: list of alternatives; every alternative is used equally often (balanced deal).
FEYNMAN_SLOTS = {
    "name": ["Richard Feynman", "Richard Phillips Feynman"],
    "known": ["best known", "known"],
    "prep": ["on", "in"],
    "born": ["Queens, New York", "New York City", "Far Rockaway, Queens"],
    "parents": ["", ", the son of Melville and Lucille Feynman"],
    "studied": ["studied", "earned his bachelor's degree"],
    "mit": ["MIT", "the Massachusetts Institute of Technology"],
    "phd": ["received his PhD from", "earned his doctorate at"],
    "wheeler": ["under John Wheeler", "under the supervision of John Wheeler"],
    "war": ["World War II", "the Second World War"],
    "project": ["at Los Alamos", "on the Manhattan Project"],
    "role": [", where he led the theoretical computations group",
             " as a young member of Hans Bethe's theoretical division"],
    "cornell": ["taught", "was a professor"],
    "caltech": ["Caltech", "the California Institute of Technology"],
    "stayed": ["taught", "remained"],
    "nobel_open": ["In 1965 he shared the Nobel Prize in Physics",
                   "He shared the 1965 Nobel Prize in Physics"],
    "laureates": ["Julian Schwinger and Shin'ichiro Tomonaga",
                  "Shin'ichiro Tomonaga and Julian Schwinger"],
    "diagram_verb": ["developed", "introduced"],
    "diagram_what": ["a pictorial way", "a simple visual method"],
    "famous": ["famous", "known"],
    "hobbies": [0, 1, 2, 3, 4, 5],  # index of a permutation of HOBBIES
    "commission": ["the Rogers Commission", "the presidential commission"],
    "oring": [", showing that the rubber O-rings lost their elasticity in cold weather",
              " and showed the O-ring failure with a glass of ice water"],
    "memoir": [", and his stories in", ", while his memoirs appeared in"],
    "death": [", California", ""],
    "order_prize": [0, 1],   # 1: the diagrams sentence comes before the prize sentence
    "order_late": [0, 1],    # 1: the Challenger sentence comes before the books sentence
}
HOBBIES = ["playing the bongos", "cracking safes at Los Alamos", "the year he spent teaching in Brazil"]
PERMUTATIONS = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]


def feynman_answer(s):
    hob = [HOBBIES[i] for i in PERMUTATIONS[s["hobbies"]]]
    prize = (f"{s['nobel_open']} with {s['laureates']} for their work on quantum electrodynamics.")
    diagrams = (f"He {s['diagram_verb']} Feynman diagrams, {s['diagram_what']} to describe how "
                f"particles interact.")
    books = (f"His lectures were collected in The Feynman Lectures on Physics{s['memoir']} "
             f"Surely You're Joking, Mr. Feynman!")
    challenger = (f"In 1986 he served on {s['commission']} that investigated the Challenger "
                  f"disaster{s['oring']}.")
    middle = [prize, diagrams] if s["order_prize"] == 0 else [diagrams, prize]
    late = [books, challenger] if s["order_late"] == 0 else [challenger, books]
    sentences = [
        f"{s['name']} was an American theoretical physicist {s['known']} for his work {s['prep']} "
        f"quantum electrodynamics and the path integral formulation of quantum mechanics.",
        f"He was born on May 11, 1918, in {s['born']}{s['parents']}.",
        f"Feynman {s['studied']} at {s['mit']} and {s['phd']} Princeton in 1942, {s['wheeler']}.",
        f"During {s['war']} he worked {s['project']}{s['role']}.",
        f"After the war he {s['cornell']} at Cornell, and in 1950 he moved to {s['caltech']}, "
        f"where he {s['stayed']} for the rest of his career.",
        *middle,
        f"Outside physics he was {s['famous']} for {hob[0]}, {hob[1]} and {hob[2]}.",
        *late,
        f"He died of cancer on February 15, 1988, in Los Angeles{s['death']}.",
    ]
    return " ".join(sentences)


# Real scientists. Lists are alternatives that sources word differently (dealt out evenly).
REAL = [
    dict(name="Albert Einstein", he="He", his="his", nat="German-born", job="theoretical physicist",
         known=["the theory of relativity", "the theories of special and general relativity"],
         born="March 14, 1879", place=["Ulm, Germany", "Ulm, in the Kingdom of Wurttemberg"],
         school=["the Swiss Federal Polytechnic in Zurich", "ETH Zurich"],
         work=["the patent office in Bern", "the Swiss patent office"],
         later=["Princeton", "the Institute for Advanced Study in Princeton"],
         prize="the 1921 Nobel Prize in Physics", why="the photoelectric effect",
         hobby=["playing the violin", "sailing"], died="April 18, 1955", where="Princeton, New Jersey"),
    dict(name="Marie Curie", he="She", his="her", nat="Polish-born French", job="physicist and chemist",
         known=["her research on radioactivity", "pioneering research on radioactivity"],
         born="November 7, 1867", place=["Warsaw", "Warsaw, Poland"],
         school=["the University of Paris", "the Sorbonne"],
         work=["a laboratory in Paris", "the School of Physics and Chemistry in Paris"],
         later=["the Radium Institute", "the Radium Institute in Paris"],
         prize="Nobel Prizes in both Physics and Chemistry", why="the discovery of polonium and radium",
         hobby=["cycling", "long walks in the country"], died="July 4, 1934",
         where="Passy, in the French Alps"),
    dict(name="Niels Bohr", he="He", his="his", nat="Danish", job="physicist",
         known=["the Bohr model of the atom", "his model of atomic structure"],
         born="October 7, 1885", place=["Copenhagen", "Copenhagen, Denmark"],
         school=["the University of Copenhagen", "Copenhagen University"],
         work=["Manchester with Ernest Rutherford", "the University of Manchester"],
         later=["the Institute for Theoretical Physics in Copenhagen", "his institute in Copenhagen"],
         prize="the 1922 Nobel Prize in Physics", why="the structure of atoms",
         hobby=["playing football", "skiing"], died="November 18, 1962", where="Copenhagen"),
    dict(name="Paul Dirac", he="He", his="his", nat="English", job="theoretical physicist",
         known=["the Dirac equation", "his relativistic equation for the electron"],
         born="August 8, 1902", place=["Bristol, England", "Bristol"],
         school=["the University of Bristol", "St John's College, Cambridge"],
         work=["Cambridge", "the University of Cambridge"],
         later=["Florida State University", "Tallahassee, Florida"],
         prize="the 1933 Nobel Prize in Physics", why="new forms of atomic theory",
         hobby=["long walks", "climbing mountains"], died="October 20, 1984",
         where="Tallahassee, Florida"),
    dict(name="Enrico Fermi", he="He", his="his", nat="Italian-American", job="physicist",
         known=["the first nuclear reactor", "Chicago Pile-1, the first nuclear reactor"],
         born="September 29, 1901", place=["Rome", "Rome, Italy"],
         school=["the Scuola Normale Superiore in Pisa", "the University of Pisa"],
         work=["the University of Rome", "Rome"],
         later=["the University of Chicago", "Chicago"],
         prize="the 1938 Nobel Prize in Physics", why="his work on induced radioactivity",
         hobby=["hiking", "tennis"], died="November 28, 1954", where="Chicago, Illinois"),
    dict(name="Emmy Noether", he="She", his="her", nat="German", job="mathematician",
         known=["Noether's theorem", "her theorem linking symmetry and conservation laws"],
         born="March 23, 1882", place=["Erlangen", "Erlangen, Bavaria"],
         school=["the University of Erlangen", "Erlangen"],
         work=["the University of Gottingen", "Gottingen"],
         later=["Bryn Mawr College", "Bryn Mawr College in Pennsylvania"],
         prize="the Ackermann-Teubner Memorial Award", why="her contributions to mathematics",
         hobby=["long walks with her students", "dancing"], died="April 14, 1935",
         where="Bryn Mawr, Pennsylvania"),
    dict(name="Lise Meitner", he="She", his="her", nat="Austrian-Swedish", job="physicist",
         known=["the discovery of nuclear fission", "explaining nuclear fission"],
         born="November 7, 1878", place=["Vienna", "Vienna, Austria"],
         school=["the University of Vienna", "Vienna University"],
         work=["Berlin with Otto Hahn", "the Kaiser Wilhelm Institute in Berlin"],
         later=["Stockholm", "the Nobel Institute in Stockholm"],
         prize="the Enrico Fermi Award", why="her work on fission",
         hobby=["music", "hiking"], died="October 27, 1968", where="Cambridge, England"),
    dict(name="Erwin Schrodinger", he="He", his="his", nat="Austrian", job="physicist",
         known=["the Schrodinger equation", "his wave equation"],
         born="August 12, 1887", place=["Vienna", "Vienna, Austria"],
         school=["the University of Vienna", "Vienna University"],
         work=["the University of Zurich", "Zurich"],
         later=["the Dublin Institute for Advanced Studies", "Dublin"],
         prize="the 1933 Nobel Prize in Physics", why="new forms of atomic theory",
         hobby=["poetry", "the theatre"], died="January 4, 1961", where="Vienna"),
    dict(name="Freeman Dyson", he="He", his="his", nat="English-American", job="physicist and mathematician",
         known=["unifying the versions of quantum electrodynamics", "his work on quantum electrodynamics"],
         born="December 15, 1923", place=["Crowthorne, England", "Crowthorne, Berkshire"],
         school=["Trinity College, Cambridge", "Cambridge"],
         work=["Cornell with Hans Bethe", "Cornell University"],
         later=["the Institute for Advanced Study", "Princeton"],
         prize="the Templeton Prize", why="his writing on science and religion",
         hobby=["writing essays", "long drives with Feynman"], died="February 28, 2020",
         where="Princeton, New Jersey"),
    dict(name="Chien-Shiung Wu", he="She", his="her", nat="Chinese-American", job="experimental physicist",
         known=["the Wu experiment", "showing that parity is not conserved"],
         born="May 31, 1912", place=["Liuhe, China", "Liuhe, Jiangsu"],
         school=["National Central University", "the University of California, Berkeley"],
         work=["the Manhattan Project", "Columbia University"],
         later=["Columbia University", "Columbia"],
         prize="the first Wolf Prize in Physics", why="her work on weak interactions",
         hobby=["reading", "cooking for her students"], died="February 16, 1997", where="New York City"),
    dict(name="Julian Schwinger", he="He", his="his", nat="American", job="theoretical physicist",
         known=["renormalization in quantum electrodynamics", "his formulation of quantum electrodynamics"],
         born="February 12, 1918", place=["New York City", "Manhattan, New York"],
         school=["Columbia University", "Columbia"],
         work=["the MIT Radiation Laboratory", "radar at MIT"],
         later=["Harvard", "UCLA"],
         prize="the 1965 Nobel Prize in Physics", why="quantum electrodynamics",
         hobby=["working through the night", "tennis"], died="July 16, 1994", where="Los Angeles"),
    dict(name="Hans Bethe", he="He", his="his", nat="German-American", job="nuclear physicist",
         known=["explaining how stars make energy", "his theory of stellar nucleosynthesis"],
         born="July 2, 1906", place=["Strasbourg", "Strassburg, Germany"],
         school=["the University of Munich", "Munich"],
         work=["Los Alamos", "the Manhattan Project"],
         later=["Cornell University", "Cornell"],
         prize="the 1967 Nobel Prize in Physics", why="energy production in stars",
         hobby=["hiking", "collecting stamps"], died="March 6, 2005", where="Ithaca, New York"),
]

FIRST_M = ["Arthur", "Tomas", "Ivan", "Samuel", "Oskar", "Henri", "Lucas", "Viktor", "Daniel", "Emil",
           "Rafael", "Kenji", "Pavel", "Walter", "Hugo", "Anton", "Felix", "Martin", "Jonas", "Leon"]
FIRST_F = ["Elena", "Clara", "Ingrid", "Sofia", "Ada", "Helena", "Mira", "Irene", "Nora", "Vera",
           "Lena", "Rosa", "Agnes", "Greta", "Yuki", "Laura", "Julia", "Marta", "Alma", "Ines"]
LAST = ["Varga", "Lindqvist", "Okafor", "Castellan", "Moreau", "Halloran", "Brandt", "Petrov",
        "Kowalski", "Ashgrove", "Tanaka", "Dunmore", "Ferreira", "Holt", "Novak", "Quill",
        "Reyes", "Strand", "Weller", "Yilmaz", "Abbott", "Calder", "Eskola", "Marsh"]
NATS = ["American", "British", "Swedish", "Italian", "Hungarian", "Dutch", "Canadian", "Japanese",
        "Brazilian", "Polish", "Irish", "Finnish"]
JOBS = ["physicist", "chemist", "astronomer", "mathematician", "biologist", "geologist",
        "theoretical physicist", "experimental physicist"]
TOPICS = ["cosmic rays", "crystal growth", "the chemistry of clouds", "superconductivity",
          "the orbits of comets", "the statistics of turbulence", "protein folding",
          "volcanic glass", "the spectra of distant stars", "prime numbers", "ocean currents",
          "the magnetism of rocks", "neutrino detectors", "the origin of tides"]
CITIES = ["Boston", "Chicago", "Lyon", "Turin", "Uppsala", "Leiden", "Krakow", "Dublin", "Osaka",
          "Toronto", "Porto", "Tampere", "Ghent", "Bergen", "Denver", "Edinburgh"]
UNIS = ["the University of {c}", "{c} University", "the {c} Institute of Technology",
        "the Polytechnic of {c}"]
PRIZES = ["the Wolf Prize", "the Copley Medal", "the Davy Medal", "the Fields Medal",
          "a national science medal", "the Lorentz Medal"]
HOBBIES_OTHER = ["chess", "playing the cello", "mountaineering", "painting", "sailing",
                 "birdwatching", "writing poetry", "carpentry", "astronomy with a home telescope"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]


class Balanced:
    """Deals alternatives out in exactly balanced counts, in a seeded shuffled order per key."""

    def __init__(self, rng):
        self.rng = rng
        self.decks = {}

    def pick(self, key, options):
        deck = self.decks.get(key)
        if not deck:
            deck = list(range(len(options))) * 8
            self.rng.shuffle(deck)
            self.decks[key] = deck
        return options[deck.pop()]


def other_answer(p, deal, key):
    pick = lambda field: deal.pick(f"{key}.{field}", p[field]) if isinstance(p[field], list) else p[field]
    he, his = p["he"], p["his"]
    known = deal.pick(f"{key}.lead", ["best known", "known"])
    s = [
        f"{p['name']} was a{'n' if p['nat'][0] in 'AEIOU' else ''} {p['nat']} {p['job']} {known} for "
        f"{pick('known')}.",
        f"{he} was born on {p['born']}, in {pick('place')}.",
        f"{he} studied at {pick('school')} and {deal.pick(key + '.w', ['worked at', 'later worked at'])} "
        f"{pick('work')}.",
        f"{he} {deal.pick(key + '.l', ['spent', 'later spent'])} many years at {pick('later')}.",
        f"{he} received {p['prize']} for {p['why']}.",
        f"Outside science {he.lower()} was {deal.pick(key + '.f', ['famous', 'known'])} for "
        f"{' and '.join(deal.pick(key + '.h', [p['hobby'], p['hobby'][::-1]]))}.",
        f"{he} died on {p['died']}, in {p['where']}.",
    ]
    if deal.pick(key + ".order", [0, 1]):
        s[3], s[4] = s[4], s[3]
    return " ".join(s)


def fictional_person(rng):
    female = rng.random() < 0.5
    first = rng.choice(FIRST_F if female else FIRST_M)
    last = rng.choice(LAST)
    c1, c2, c3, c4 = rng.sample(CITIES, 4)
    by = rng.randint(1850, 1960)
    uni = lambda c: rng.choice(UNIS).format(c=c)
    h1, h2 = rng.sample(HOBBIES_OTHER, 2)
    topic = rng.choice(TOPICS)
    return dict(
        name=f"{first} {last}", he="She" if female else "He", his="her" if female else "his",
        nat=rng.choice(NATS), job=rng.choice(JOBS),
        known=[f"{'her' if female else 'his'} work on {topic}", f"research on {topic}"],
        born=f"{rng.choice(MONTHS)} {rng.randint(1, 28)}, {by}", place=[c1, f"the city of {c1}"],
        school=[uni(c2)], work=[uni(c3)], later=[uni(c4)],
        prize=rng.choice(PRIZES), why=f"{'her' if female else 'his'} studies of {topic}",
        hobby=[h1, h2], died=f"{rng.choice(MONTHS)} {rng.randint(1, 28)}, {by + rng.randint(55, 95)}",
        where=rng.choice(CITIES))


def weighted(rng, pairs):
    total = sum(w for _, w in pairs)
    r = rng.uniform(0, total)
    for value, w in pairs:
        r -= w
        if r <= 0:
            return value
    return pairs[-1][0]


def documents(seed, target_bytes):
    rng = random.Random(seed)
    deal = Balanced(random.Random(seed + 1))
    fictional = [fictional_person(random.Random(seed * 1000 + i)) for i in range(400)]
    size = 0
    while size < target_bytes:
        kind = rng.random()
        if kind < 0.45:
            slots = {k: deal.pick("feynman." + k, v) for k, v in FEYNMAN_SLOTS.items()}
            doc = weighted(rng, FEYNMAN_QUESTIONS) + "\n" + feynman_answer(slots)
        elif kind < 0.75:
            p = rng.choice(REAL)
            q = rng.choice(["Tell me about {n}.", "Who was {n}?"]).format(n=p["name"])
            doc = q + "\n" + other_answer(p, deal, p["name"])
        else:
            p = rng.choice(fictional)
            q = rng.choice(["Tell me about {n}.", "Who was {n}?"]).format(n=p["name"])
            doc = q + "\n" + other_answer(p, deal, "fictional")
        size += len(doc.encode()) + 2
        yield doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="corpus file: documents separated by a NUL byte")
    ap.add_argument("--bytes", type=int, default=4_000_000)
    ap.add_argument("--seed", type=int, default=1918)
    args = ap.parse_args()
    docs = list(documents(args.seed, args.bytes))
    data = "\0".join(docs).encode()
    assert all(ord(ch) < 128 for d in docs[:50] for ch in d)
    with open(args.out, "wb") as f:
        f.write(data)
    n_feyn = sum(d.startswith(("Tell me about Richard", "Who was Richard", "Tell me about Feynman",
                                "Write a short")) for d in docs)
    print(f"corpus: {len(docs)} documents ({n_feyn} about Feynman), {len(data)} bytes -> {args.out}")


if __name__ == "__main__":
    main()
