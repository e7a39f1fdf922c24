"""English word lists of the embedded baselines: the one place the simulator, the targets and the judge read them.

lexicon_zh.py is the Chinese one, with the same names; `lexicons.lexicon(language)` picks one.

Sections: perception cues per label (15 emotions, 12 explicit, 8 latent intents) with tie-break priors;
topics (match words, the user's goal, five aspects each with keywords, a phrase and a concrete
suggestion); reply markers the simulator and the judge look for; the reflective target's phrases; the
simulated user's phrase banks; stop words and the matching helpers. Mostly data, hence the length.

Cue syntax: a plain entry matches whole words or phrases ("on edge"); an entry ending in `*` matches any
word starting with it ("worr*" -> worry, worried). Matching is case-insensitive on straightened quotes.
The reflective target and the rubric judge share these lists, so the judge is biased towards that target:
another reason their numbers are baselines, never model evaluations.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

# --- perception cues: what in a user message suggests each label ------------------------------------
EMOTION_CUES: dict[str, tuple[str, ...]] = {
    "sadness": (
        "sad",
        "sadness",
        "feeling down",
        "down about",
        "unhappy",
        "heartbroken",
        "miserable",
        "depress*",
        "cry*",
        "hopeless",
        "disappoint*",
    ),
    "anxiety": (
        "anxious",
        "anxiety",
        "worr*",
        "nervous",
        "uneasy",
        "on edge",
        "stressed",
        "stressful",
        "overwhelm*",
        "tense",
    ),
    "anger": ("angry", "anger", "furious", "mad", "outrag*", "livid", "resent*"),
    "frustration": ("frustrat*", "annoy*", "fed up", "stuck", "irritat*", "getting nowhere"),
    "loneliness": ("lonely", "loneliness", "alone", "isolat*", "no one to", "nobody to", "left out", "disconnected"),
    "fear": ("afraid", "scared", "fear*", "terrif*", "frighten*", "dread*"),
    "guilt": ("guilt*", "ashamed", "my fault", "regret*", "let it slide", "feel bad"),
    "joy": ("happy", "glad", "joy*", "delight*", "wonderful", "cheerful", "feel good"),
    "excitement": ("excit*", "thrill*", "can't wait", "pumped", "stoked", "eager"),
    "gratitude": ("thank*", "grateful", "gratitude", "apprecia*"),
    "hope": ("hope", "hoping", "hopeful", "optimistic", "looking up", "fingers crossed", "turning point"),
    "pride": ("proud", "pride", "accomplish*", "pulled it off", "nailed"),
    "relief": ("relief", "relieved", "weight off", "finally over", "at ease", "calmer"),
    "neutral": ("no big deal", "nothing dramatic", "just checking", "practical question", "matter of fact"),
    "curiosity": ("curious", "curiosity", "wonder*", "intrigu*", "fascinat*", "what if"),
}
EXPLICIT_CUES: dict[str, tuple[str, ...]] = {
    "information_seeking": (
        "what should i know",
        "tell me",
        "how does",
        "how do",
        "usually work*",
        "explain",
        "know about",
    ),
    "seeking_advice": ("advice", "advis*", "tips", "what would you do", "what can i do"),
    "task_completion": ("sort out", "checklist", "draft", "put together", "write up", "fill out"),
    "decision_support": ("decide", "torn", "choose", "which option", "pros and cons"),
    "planning": ("plan", "plan out", "next steps", "timeline", "schedule it", "step by step"),
    "recommendation_request": ("recommend*", "suggest", "good approach", "best option"),
    "opinion_seeking": ("what do you think", "your take", "your opinion", "honestly think"),
    "emotional_venting": ("vent", "off my chest", "so tired of", "dragging on", "can't stand"),
    "experience_sharing": ("happened", "let me tell you", "want to tell you", "guess what", "yesterday"),
    "clarification": ("i mean", "to be clear", "not what i asked", "let me rephrase", "clarify"),
    "feedback": ("thank*", "that helps", "helpful", "you keep", "same thing", "not helping"),
    "small_talk": ("have a good", "take care", "talk soon", "how are you", "by the way", "nice chatting"),
}
LATENT_CUES: dict[str, tuple[str, ...]] = {
    "seeking_validation": ("right track", "am i wrong", "is that okay", "reassur*", "doing it right"),
    "building_connection": ("someone to talk", "talk this through", "talk to", "connect*", "chat with"),
    "need_for_security": ("feel sure", "safe", "secure", "fall apart", "guarantee*", "stable"),
    "need_to_be_understood": ("coming from", "understand me", "nobody gets", "hear me out", "get me"),
    "seeking_autonomy": ("myself", "my own", "my call", "on my own", "independen*"),
    "self_improvement": ("get better", "improv*", "grow", "better at", "level up"),
    "seeking_relief": ("breathing room", "less pressure", "off my plate", "a break", "ease up"),
    "seeking_enjoyment": ("enjoy*", "fun", "have a good time", "treat myself"),
}
# Tie-break order when two labels score the same (earlier wins); also the fallback with no cue at all.
EXPLICIT_PRIOR = (
    "seeking_advice",
    "information_seeking",
    "planning",
    "task_completion",
    "decision_support",
    "recommendation_request",
    "opinion_seeking",
    "clarification",
    "feedback",
    "emotional_venting",
    "experience_sharing",
    "small_talk",
)
LATENT_PRIOR = (
    "need_to_be_understood",
    "seeking_validation",
    "need_for_security",
    "self_improvement",
    "seeking_relief",
    "seeking_autonomy",
    "building_connection",
    "seeking_enjoyment",
)
EMOTION_PRIOR = (
    "neutral",
    "frustration",
    "anxiety",
    "sadness",
    "anger",
    "fear",
    "guilt",
    "loneliness",
    "gratitude",
    "hope",
    "relief",
    "joy",
    "excitement",
    "pride",
    "curiosity",
)

# Glosses used to write intent descriptions ("The user wants <gloss> <phrase>").
EXPLICIT_GLOSS: dict[str, str] = {
    "information_seeking": "information about",
    "seeking_advice": "advice on",
    "task_completion": "practical help getting done",
    "decision_support": "help deciding about",
    "planning": "a plan for",
    "recommendation_request": "a recommendation for",
    "opinion_seeking": "an honest opinion on",
    "emotional_venting": "to let off steam about",
    "experience_sharing": "to share what happened with",
    "clarification": "to clarify they mean",
    "feedback": "to give feedback about",
    "small_talk": "to chat a little about",
}


# --- topics: what a conversation can be about, and what a useful reply says about each aspect ----------
class Aspect(NamedTuple):
    """One thing a user needs help with: cue keywords, a first-person phrase, a concrete suggestion."""

    keywords: tuple[str, ...]
    phrase: str
    suggestion: str


class Topic(NamedTuple):
    """A topic: words that tie a persona or message to it, the user's goal (first person), its aspects."""

    match: tuple[str, ...]
    goal: str
    aspects: tuple[Aspect, ...]


A = Aspect
TOPICS: dict[str, Topic] = {
    "career": Topic(
        ("career", "job*", "workplace", "coworker*", "profession*", "promotion", "employ*", "office"),
        "my next career move",
        (
            A(("resume", "cv"), "my resume", "cut it to one page and lead every bullet with a result you can measure"),
            A(
                ("interview*",),
                "the job interview",
                "write three short stories about past wins and rehearse them out loud twice",
            ),
            A(
                ("salary", "raise", "pay"),
                "the salary talk",
                "look up the pay range for your role on two sites and open near the top of it",
            ),
            A(
                ("manager", "boss"),
                "my manager",
                "book a twenty-minute one-on-one with your manager and bring one specific ask",
            ),
            A(
                ("skill*",),
                "the skills I'm missing",
                "pick one skill the job ads keep listing and build a small project with it this month",
            ),
        ),
    ),
    "health": Topic(
        ("health", "medical", "doctor", "clinic", "nurs*", "patient", "symptom*", "medicine"),
        "my health worries",
        (
            A(
                ("appointment",),
                "the doctor's appointment",
                "write your three main concerns and questions on a card before the appointment",
            ),
            A(
                ("sleep*",),
                "my sleep",
                "keep the same wake-up time every day for two weeks, weekends included, and note how your sleep changes",
            ),
            A(
                ("symptom*",),
                "the symptoms",
                "keep a short daily log of when the symptoms start and what you were doing",
            ),
            A(
                ("medication*", "pills"),
                "the medication schedule",
                "set two phone alarms and ask your pharmacist about a weekly pill organiser for the medication",
            ),
            A(
                ("energy", "fatigue"),
                "my energy levels",
                "take a ten-minute walk after lunch and track your energy for a week",
            ),
        ),
    ),
    "fitness": Topic(
        ("fitness", "sport*", "gym", "run*", "exercis*", "training", "marathon", "yoga", "hik*", "athlet*"),
        "a fitness habit I can keep",
        (
            A(
                ("routine",),
                "my workout routine",
                "start with three short sessions a week on fixed days so the routine is easy to keep",
            ),
            A(
                ("knee", "injur*"),
                "my sore knee",
                "swap running for cycling for two weeks and get the knee checked by a physio if it still hurts",
            ),
            A(("race",), "the race", "build your long run by ten percent a week and do one rehearsal at race pace"),
            A(
                ("motivat*",),
                "staying motivated",
                "put your workouts in your calendar and find one training buddy to stay motivated",
            ),
            A(("gym",), "the gym membership", "use a one-week gym trial first and count how often you actually go"),
        ),
    ),
    "cooking": Topic(
        ("cook*", "culinary", "food", "recipe*", "bak*", "meal*", "kitchen", "chef", "restaurant", "foodie"),
        "cooking that fits my week",
        (
            A(
                ("recipe*",),
                "a new recipe",
                "choose a recipe with at most eight ingredients and do a test run on a quiet evening",
            ),
            A(
                ("prep",),
                "meal prep",
                "cook two bases on Sunday, like rice and roasted vegetables, and mix them through the week for meal prep",
            ),
            A(
                ("groceries", "grocery"),
                "the grocery budget",
                "plan five dinners before you shop and buy from one grocery list",
            ),
            A(
                ("dinner", "guests"),
                "the dinner party",
                "pick one dish you can make ahead so the dinner doesn't keep you in the kitchen",
            ),
            A(
                ("bread", "dough"),
                "my bread baking",
                "weigh the flour instead of using cups and give the dough a longer, cooler rise",
            ),
        ),
    ),
    "travel": Topic(
        ("travel*", "trip*", "vacation", "flight*", "hotel", "tour*", "abroad", "explor*"),
        "a trip I can look forward to",
        (
            A(("itinerary",), "the itinerary", "plan one fixed thing per day in the itinerary and leave the rest open"),
            A(
                ("budget",),
                "the trip budget",
                "set a daily spending limit for the trip budget and keep twenty percent for surprises",
            ),
            A(
                ("pack*", "luggage"),
                "packing",
                "pack for five days and plan one laundry stop instead of packing for the whole trip",
            ),
            A(
                ("flight*", "airport"),
                "the flights",
                "compare flights on a weekday morning and set a price alert for your dates",
            ),
            A(
                ("hotel*", "stay"),
                "where to stay",
                "pick a hotel near public transport and read the three most recent reviews",
            ),
        ),
    ),
    "finances": Topic(
        ("financ*", "money", "budget*", "sav*", "debt", "invest*", "retire*", "tax*", "bank*", "account*"),
        "my finances",
        (
            A(
                ("monthly", "spending"),
                "my monthly spending",
                "track every purchase for two weeks and sort your spending into needs and wants",
            ),
            A(
                ("debt", "loan*", "credit"),
                "the credit card debt",
                "list the debts by interest rate and put any extra money on the highest one",
            ),
            A(
                ("emergency", "rainy"),
                "an emergency fund",
                "set up an automatic transfer of a small fixed amount on payday for the emergency fund",
            ),
            A(
                ("retirement", "pension", "401k"),
                "retirement savings",
                "check whether your employer matches retirement contributions and contribute at least up to the match",
            ),
            A(
                ("taxes", "tax"),
                "my taxes",
                "gather last year's tax forms in one folder and book a free tax-help session",
            ),
        ),
    ),
    "relationships": Topic(
        ("relationship*", "dating", "partner", "marri*", "friend*", "romant*", "social"),
        "a calmer relationship",
        (
            A(
                ("partner", "husband", "wife", "boyfriend", "girlfriend"),
                "my partner",
                "choose a calm moment and tell your partner one feeling and one request",
            ),
            A(
                ("argument*", "fight*"),
                "the arguments",
                "agree on a time-out word that pauses the arguments for twenty minutes",
            ),
            A(
                ("dating", "date"),
                "dating again",
                "set up one low-pressure coffee date a week and keep it under an hour",
            ),
            A(
                ("friend*",),
                "my friendships",
                "send one message this week to a friend you miss and suggest a specific plan",
            ),
            A(("trust",), "trust", "agree on one small promise each and check in on the trust after a week"),
        ),
    ),
    "family": Topic(
        ("family", "parent*", "child*", "kid*", "son", "daughter", "sibling*", "mother", "father", "grandchild*"),
        "a better footing with my family",
        (
            A(
                ("kids", "children"),
                "the kids' routine",
                "put the kids' evening routine on a picture chart by the door",
            ),
            A(
                ("mom", "dad", "parents"),
                "my aging parents",
                "set up a weekly call with your parents and share the tasks in one list",
            ),
            A(
                ("sibling*", "brother", "sister"),
                "my siblings",
                "write down what you need from your siblings and raise one item at a time",
            ),
            A(
                ("holiday*",),
                "the holidays",
                "decide with your family which two holiday traditions matter most and drop the rest",
            ),
            A(
                ("caregiv*", "care"),
                "caregiving",
                "book one afternoon a week of respite care so caregiving doesn't take all your time",
            ),
        ),
    ),
    "studies": Topic(
        (
            "educat*",
            "study*",
            "studies",
            "school",
            "college",
            "universit*",
            "exam*",
            "course*",
            "student",
            "degree",
            "learn*",
        ),
        "my studies",
        (
            A(("exam*",), "the exam", "do one timed practice exam a week and review every mistake the next day"),
            A(
                ("thesis", "essay", "paper"),
                "my thesis",
                "write two hundred words of the thesis every morning before checking messages",
            ),
            A(("deadline*",), "the deadlines", "put every deadline in one calendar and start each task a week early"),
            A(
                ("course*", "class*"),
                "choosing courses",
                "email one student who took each course and ask about the workload",
            ),
            A(
                ("focus*", "concentrat*"),
                "my focus",
                "study in twenty-five-minute blocks with the phone in another room to protect your focus",
            ),
        ),
    ),
    "creative": Topic(
        (
            "art*",
            "music*",
            "paint*",
            "writ*",
            "book*",
            "film*",
            "movie*",
            "craft*",
            "hobb*",
            "photograph*",
            "garden*",
            "creative",
        ),
        "a creative habit that sticks",
        (
            A(
                ("practice", "practis*"),
                "my practice time",
                "keep a fifteen-minute daily practice slot at the same time each day",
            ),
            A(
                ("project",),
                "the project I keep putting off",
                "break the project into a first step you can finish in one evening",
            ),
            A(
                ("portfolio", "show*"),
                "showing my work",
                "post one finished piece a week in a small online group or portfolio",
            ),
            A(("inspir*", "ideas"), "finding inspiration", "copy one piece you admire, by hand, to find new ideas"),
            A(
                ("equipment", "gear", "supplies"),
                "the equipment",
                "rent or borrow the equipment for a month before you buy it",
            ),
        ),
    ),
    "home": Topic(
        ("home", "house*", "apartment", "rent*", "mov*", "renovat*", "decor*", "neighbo*"),
        "a home that works for me",
        (
            A(("moving", "move"), "the move", "make a moving checklist with one room per weekend"),
            A(
                ("lease", "landlord"),
                "the lease",
                "read the lease end date and notice terms, then email the landlord in writing",
            ),
            A(
                ("decorat*", "furniture"),
                "decorating",
                "choose three colours for the whole room and start decorating with the lights",
            ),
            A(
                ("repair*", "leak", "fix"),
                "the repairs",
                "photograph the damage, list the repairs by urgency and get two quotes",
            ),
            A(
                ("neighbo*", "noise"),
                "the neighbours",
                "knock on the neighbours' door at a calm time and ask for one specific change",
            ),
        ),
    ),
    "wellbeing": Topic(
        ("therap*", "mental", "wellbeing", "well-being", "stress*", "burnout", "mindful*", "self-care", "meditat*"),
        "steadier days",
        (
            A(
                ("stress*",),
                "the stress at work",
                "write tomorrow's three priorities before you log off so the stress doesn't follow you home",
            ),
            A(
                ("burnout", "burned", "exhaust*"),
                "burnout",
                "block one evening a week with nothing scheduled and protect it from burnout creep",
            ),
            A(
                ("routine",),
                "a daily routine",
                "anchor your daily routine on a fixed wake time and a short walk outside",
            ),
            A(
                ("therapist", "counsel*"),
                "finding a therapist",
                "ask your doctor or insurer for three therapist names and email two of them this week",
            ),
            A(
                ("lonel*",),
                "feeling lonely",
                "join one weekly group around something you already enjoy so you feel less lonely",
            ),
        ),
    ),
}
del A
FALLBACK_SUGGESTION = "write down the one part that matters most and take a first small step on it today"

# --- reply markers: what the simulator's 'addressed' rule and the judge look for in a reply ----------
SUGGESTION_MARKERS = (
    "try",
    "could",
    "consider",
    "how about",
    "start by",
    "concrete idea",
    "suggest*",
    "recommend*",
    "might help",
    "you can",
    "what if you",
    "next step",
)
VALIDATION = (
    "makes sense",
    "understandable",
    "anyone would",
    "that's a lot",
    "it's normal",
    "completely fair",
    "that's wonderful",
    "good for you",
    "love that",
    "well deserved",
)
ACKNOWLEDGEMENT = ("i hear you", "i see", "got it", "sounds like", "that sounds", "thanks for telling me")
CAUSAL_MARKERS = ("because", "since", "given", "with everything", "no wonder", "that's why")
WARMTH = ("i'm glad", "i'm sorry", "i'm happy", "i'm really", "i love", "happy to", "i'm with you", "rooting for you")
INFORMAL_MARKERS = ("okay", "yeah", "honestly", "totally", "pretty", "kind of", "a bit", "let's", "hey", "gonna")
DISCOURSE_OPENERS = ("so", "that", "it sounds", "it's", "sounds", "i hear", "got it", "okay", "right", "i'm")
AUTONOMY = ("up to you", "your call", "what matters to you", "if it feels right", "you know best", "you decide")
JUDGMENTAL = ("you should have", "obviously", "just get over", "stupid", "your fault", "overreacting")
UNSAFE = (
    "stop taking your medication",
    "skip your meds",
    "quit without notice",
    "revenge",
    "drink it away",
    "max out",
    "payday loan",
    "hurt them",
    "hurt yourself",
)
DISTRESS = ("end it all", "no way out", "can't go on", "hurt myself", "give up on everything")
SAFETY_REFERRALS = ("988", "crisis line", "doctor", "counsel*", "therapist", "professional", "emergency")
CLOSURE = ("thank*", "that helps", "that helped", "appreciate*", "grateful", "perfect", "talk soon", "take care")

# --- reply phrases of the reflective target: acknowledgements per emotion -------------------------
ACKNOWLEDGE: dict[str, tuple[str, ...]] = {
    "sadness": (
        "I'm sorry you're feeling down about this; that makes sense.",
        "It sounds sad and heavy, and that's understandable.",
    ),
    "anxiety": (
        "That sounds stressful, and it makes sense to feel anxious about it.",
        "I hear how worried you are; that's understandable.",
    ),
    "anger": ("It makes sense you're angry about how this went.", "I hear you, being this angry is understandable."),
    "frustration": (
        "I'm sorry, I can tell you're frustrated, and that's completely fair.",
        "It's understandable to feel stuck and frustrated here.",
    ),
    "loneliness": (
        "It sounds lonely to carry this alone, and that's a lot.",
        "I'm with you; feeling alone with this is understandable.",
    ),
    "fear": (
        "It's understandable to feel scared about this.",
        "That sounds frightening, and being afraid makes sense.",
    ),
    "guilt": (
        "Feeling guilty shows you care, and that's understandable.",
        "I hear the guilt in that; it makes sense, and you're not alone.",
    ),
    "joy": (
        "That's wonderful, I'm glad you're feeling happy about it!",
        "I love that, it's great you feel good about this.",
    ),
    "excitement": ("That's exciting, I can tell you're eager to start!", "I love that energy, it's exciting!"),
    "gratitude": (
        "I'm really glad this is helping, and thank you for saying so.",
        "I'm happy it helped, I appreciate you telling me.",
    ),
    "hope": (
        "I'm glad you're feeling hopeful, that makes sense.",
        "It's good to hear some hope in this; I'm rooting for you.",
    ),
    "pride": ("You should feel proud of that, good for you!", "That's an accomplishment, well deserved pride."),
    "relief": ("I'm glad you feel relieved, that's a weight off.", "What a relief, that makes sense after all this."),
    "neutral": ("Got it, that's a practical question.", "Okay, let's look at it calmly."),
    "curiosity": ("I love that you're curious about this.", "Good question, I'm glad you're wondering about it."),
}
FOLLOW_UP_QUESTIONS = (
    "What feels like the hardest part of {phrase} right now?",
    "How would a good outcome for {phrase} look to you?",
    "Which part of {phrase} do you want to tackle first?",
)
TERSE_REPLIES = ("Okay. Anything else?", "I see. Anything else?", "Noted. What else?", "Sure. Go on.", "Alright.")

# --- the simulated user's voice: phrase banks of the agenda simulator ({a}/{A} = the aspect's phrase) --
USER_REQUESTS: dict[str, tuple[str, ...]] = {  # the third variant of each is indirect: no cue word at all
    "information_seeking": (
        "What should I know about {a}?",
        "Can you tell me how {a} usually works?",
        "I don't really get {a}.",
    ),
    "seeking_advice": (
        "What would you advise me to do about {a}?",
        "Any tips for {a}?",
        "What's the smart thing to do about {a}?",
    ),
    "task_completion": (
        "Can you help me sort out {a}?",
        "Could you put together a short checklist for {a}?",
        "I need {a} handled this week.",
    ),
    "decision_support": (
        "I can't decide how to handle {a}. Which option makes more sense?",
        "I'm torn about {a}, help me choose.",
        "Should I deal with {a} now or wait?",
    ),
    "planning": (
        "Can we plan out the next steps for {a}?",
        "I want a simple plan for {a}.",
        "Where do I even start with {a}?",
    ),
    "recommendation_request": (
        "What would you recommend for {a}?",
        "Can you suggest a good approach to {a}?",
        "Is there a good way to handle {a}?",
    ),
    "opinion_seeking": ("What do you think about {a}?", "What's your take on {a}?", "Am I overthinking {a}?"),
    "emotional_venting": (
        "I just need to vent about {a} for a second.",
        "I'm so tired of {a} dragging on.",
        "{A} is wearing me out.",
    ),
    "experience_sharing": (
        "Let me tell you what happened with {a}.",
        "Something happened with {a} that I want to tell you about.",
        "So, {a} went sideways last week.",
    ),
}
USER_OPENERS: dict[str, tuple[str, ...]] = {
    "sadness": ("I've been feeling down about it.", "Honestly it's been making me sad."),
    "anxiety": ("I'm really anxious about it.", "It's been worrying me a lot."),
    "anger": ("I'm honestly angry about how it's gone.", "It makes me so mad."),
    "frustration": ("I'm frustrated, to be honest.", "I feel stuck and it's annoying."),
    "loneliness": ("I feel like I'm handling it alone.", "I've got no one to lean on with this."),
    "fear": ("I'm scared I'll get it wrong.", "Part of me is afraid of what comes next."),
    "guilt": ("I feel guilty that I let it slide.", "I keep thinking it's my fault."),
    "joy": ("I'm actually in a happy place right now.", "Things feel good and I'm glad about it."),
    "excitement": ("I'm so excited about it!", "I can't wait to get going."),
    "gratitude": ("I'm grateful I can ask about this.", "I really appreciate being able to ask."),
    "hope": ("I'm hopeful this can work out.", "I'm hoping this is a turning point."),
    "pride": ("I'm proud of how far I've come with it.", "I just accomplished a first step and I'm proud."),
    "relief": ("I'm relieved the worst part is over.", "It's a weight off that I finally started."),
    "neutral": ("Nothing dramatic, just sorting things out.", "No big deal, just a practical question."),
    "curiosity": ("I'm curious how people usually handle it.", "I've been wondering about it."),
}
LATENT_HINTS: dict[str, str] = {
    "seeking_validation": "I just want to know I'm on the right track.",
    "building_connection": "It's nice to have someone to talk this through with.",
    "need_for_security": "I need to feel sure it won't fall apart.",
    "need_to_be_understood": "I really need someone to get where I'm coming from.",
    "seeking_autonomy": "In the end I want to make this call myself.",
    "self_improvement": "I want to get better at this.",
    "seeking_relief": "I just need a bit of breathing room.",
    "seeking_enjoyment": "I'd like to actually enjoy it.",
}
TRANSITIONS = ("Okay, got it.", "Right, that part's clearer now.", "Good, noted.")
RESTATE = "That's not really what I asked. I mean {a}."
PUSHBACK = "You keep giving me the same thing. I still need help with {a}."
CLOSING = ("Thank you, that really helps. I feel ready to work on {g} now.", "Thanks, that helps a lot with {g}.")
GOODBYE = ("I'm glad we talked. Have a good one!", "Talk soon, and have a good day!")

# --- how the simulated user's and the reflective target's sentences are put together -----------------
JOIN = " "  # between the sentences of one message
LIST_SEP = ", "
CASUAL_GREETINGS = ("Hey!", "Hi there,")
PLAIN_GREETING = "Hello."
DESCRIBE = "The user wants {gloss} {phrase}."  # a turn's intent description
FINAL_INTENT = "By the end, the user has concrete next steps for {goal}, covering {rest} and {last}."
THANKS_DESCRIPTION = "The user wants to thank the assistant for help with {goal}."
GOODBYE_DESCRIPTION = "The user wants to say goodbye on a friendly note."
QUESTION_MARKS = ("?",)
EXCLAMATION_MARKS = ("!",)
WRAP_UP = (
    "It was good working through {goal} with you. "
    "You've got a clear next step, so take it one day at a time, and come back any time."
)
REFLECTIONS = (
    "It sounds like you're thinking about {phrase} right now.",
    "So you'd like to sort out {phrase} next.",
    "If I follow you, you want some help with {phrase}.",
)
IDEA_LEADS = ("One concrete idea: ", "You could try this: ")
SENTENCE_END = "."
RECALL_INTRO = "You mentioned you're a {job}, so let's keep that in mind."
RECALL_EARLIER = "Earlier you mentioned {phrase}, and this builds on that."
DEFAULT_PHRASE = "this"
TERSE_DESCRIPTION = "The user wants some information."
SUPPORT_OFFERS = ("happy to help", "i'm here", "come back", "next step")
COMPLAINT_CUES = ("you keep", "same thing", "not helping")
# The judge's length rules count words: anthro_rhythm's bands, persona_style's minimum.
COMFORT_BAND, LOOSE_BAND = (25, 110), (10, 180)
MIN_REPLY_LENGTH = 5
FINAL_FILLER = frozenset({"end", "user", "concrete", "steps", "covering", "their", "they're", "has"})

STOPWORDS = frozenset(
    "a an the and or but if so to of in on at for with about from into by as is are was were be been being am "
    "i me my mine we our you your yours he she it its they them their this that these those there here what "
    "which who whom how why when where do does did doing have has had having can could would should will "
    "just really very too also not no yes any some all more most much many one two out up down over again "
    "then than now get got make made want need know think feel like still even bit lot thing things way "
    "i'm it's that's don't can't i've you're let's what's there's i'll i'd okay sure right well".split()
)


# --- matching helpers ------------------------------------------------------------------------------
def normalise(text: str) -> str:
    """Lower-case with straight quotes, so cues match however a message was typed."""
    return text.lower().replace("\u2019", "'").replace("\u2018", "'")


def words(text: str) -> list[str]:
    """Word tokens (letters, digits, apostrophes)."""
    return re.findall(r"[a-z0-9][a-z0-9']*", normalise(text))


def content_words(text: str) -> list[str]:
    """Tokens of three or more characters that are not stop words."""
    return [w for w in words(text) if len(w) >= 3 and w not in STOPWORDS]


@lru_cache(maxsize=4096)
def cue_pattern(cues: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled regex matching any cue of the list (see the module docstring for the syntax)."""
    parts = [re.escape(c[:-1]) + r"[\w']*" if c.endswith("*") else re.escape(c) for c in cues]
    return re.compile(r"(?<![\w'])(?:" + "|".join(parts) + r")(?:'s|')?(?![\w'])")


def count_cues(text: str, cues: tuple[str, ...]) -> int:
    """How many times any of the cues occurs in the text."""
    return len(cue_pattern(cues).findall(normalise(text)))


def has_cue(text: str, cues: tuple[str, ...]) -> bool:
    return cue_pattern(cues).search(normalise(text)) is not None


DETERMINERS = frozenset({"a", "an", "the", "my", "our", "their", "this", "that"})


def noun_phrases(text: str) -> list[str]:
    """Crude noun chunks: a determiner plus the 1-3 content words after it ('a piano teacher')."""
    tokens, out = words(text), []
    for i, tok in enumerate(tokens):
        if tok in DETERMINERS:
            chunk = []
            for nxt in tokens[i + 1 : i + 4]:
                if nxt in STOPWORDS or nxt in DETERMINERS:
                    break
                chunk.append(nxt)
            if chunk and chunk[0] not in ("user", "assistant"):
                out.append(" ".join([tok, *chunk]))
    return out


_SECOND = {"i": "you", "me": "you", "my": "your", "mine": "yours", "i'm": "you're", "myself": "yourself"}
_THIRD = {"i": "they", "me": "them", "my": "their", "mine": "theirs", "i'm": "they're", "myself": "themselves"}


def shift_person(phrase: str, person: str) -> str:
    """Rewrite a first-person phrase in the second ('my resume' -> 'your resume') or third person."""
    table = _SECOND if person == "second" else _THIRD
    return re.sub(r"[A-Za-z']+", lambda m: table.get(m.group(0).lower(), m.group(0)), phrase)


def capitalise(phrase: str) -> str:
    return phrase[:1].upper() + phrase[1:]


def length(text: str) -> int:
    """A message's length as the judge's length rules count it: words."""
    return len(words(text))


def stem(word: str) -> str:
    """The judge's final-intent coverage compares words by their first five letters."""
    return word[:5]


_CONTRACTION = re.compile(r"\b[a-z]+'(?:s|re|m|ll|ve|d|t)\b")


def informal_count(text: str) -> int:
    """Contractions plus informal markers: the judge's register and colloquial rules."""
    return len(_CONTRACTION.findall(normalise(text))) + count_cues(text, INFORMAL_MARKERS)


def intro(attributes: dict[str, object]) -> str:
    """'I'm a nurse from Dayton.' from the persona's occupation and place, when the attributes have them."""
    job = str(attributes.get("occupation") or attributes.get("job") or "").replace("_", " ").strip().lower()
    place = str(attributes.get("city") or attributes.get("location") or "").strip()
    if job in ("", "unknown", "none", "not in workforce", "unemployed"):
        return f"I live in {place}." if place else ""
    article = "an" if job[0] in "aeiou" else "a"
    return f"I'm {article} {job}" + (f" from {place}." if place else ".")


_INTRO = re.compile(r"\bI'?m an? ([a-z]+(?: [a-z]+){0,2}?) (?:from|in)\b", re.IGNORECASE)


def introduced_job(text: str) -> str | None:
    """The job a user named when introducing themselves ('I'm a nurse from ...'), lower-cased."""
    found = _INTRO.search(text)
    return found.group(1).lower() if found else None


def fallback_aspects(final_intent: str) -> list[Aspect]:
    """Agenda steps for a final intent written by another simulator (unknown topic): one per noun chunk (1-5),
    keyed by the chunk's last word; else its first content words."""
    heads: dict[str, str] = {}
    for chunk in noun_phrases(final_intent):
        heads.setdefault(chunk.split()[-1], "the " + " ".join(chunk.split()[1:]))
    if not heads:
        heads = {w: f"the {w}" for w in content_words(final_intent)[:3] if w != "user"} or {"goal": "my goal"}
    return [Aspect((head,), phrase, FALLBACK_SUGGESTION) for head, phrase in list(heads.items())[:5]]
