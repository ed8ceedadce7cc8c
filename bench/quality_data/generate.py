"""Build the labelled conversation-memory corpora of ``bench/quality.py`` (English and Chinese).

    .venv/bin/python bench/quality_data/generate.py        # rewrites en.json and zh.json here

The shape is the one a chat bot's memory has (and the public benchmarks
LoCoMo / LongMemEval use): conversations between two people over many
sessions; each session is a RecallFile, each turn an item
(``"Speaker: words"``); questions about what was said, each labelled with
the turn(s) that answer it.

What makes it a test of recall rather than of string matching:

- **facts told across turns** — "we adopted a puppy!" / "what did you name
  him?" / "Biscuit. The kids picked it." — so the turn that answers "what is
  the name of Maya's dog?" shares no content word with the question
  (type ``neighbour``);
- **paraphrased questions** — the question says "dog" where the turn says
  "puppy", "job" where it says "position" (type ``paraphrase``), next to
  questions that reuse the turn's words (type ``direct``);
- **confusers** — both speakers, or several sessions, hold facts of the
  same kind (two pets, two trips), so a question must match the person and
  the detail, not the topic;
- **small talk** — most turns are chit-chat full of function words ("what
  did you do this weekend?", "that is so good to hear"), the noise that
  makes "what" and "did" decide a BM25 ranking.

Every value comes from the tables below through a seeded random generator:
the same seed writes the same files.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent

# -- the structures -------------------------------------------------------------


@dataclass
class Fact:
    """Turns that tell something, and questions about it (evidence = indexes into ``turns``)."""

    turns: list[tuple[int, str]]  # (speaker index 0/1 relative to the teller, text)
    questions: list[tuple[str, list[int], str]]  # (question, evidence turn indexes, type)


@dataclass
class Session:
    file: str
    turns: list[dict] = field(default_factory=list)


# -- English -------------------------------------------------------------------

EN_NAMES = ["Maya", "Caroline", "Daniel", "Priya", "Tom", "Elena", "Marcus", "Hana", "Leo", "Sofia",
            "Jonas", "Aisha", "Ben", "Chloe", "Omar", "Grace", "Ravi", "Nora", "Felix", "Ines"]

EN_PETS = [("puppy", "dog", ["golden retriever", "beagle", "corgi", "border collie", "dachshund", "labrador"]),
           ("kitten", "cat", ["tabby", "Siamese", "Maine Coon", "ragdoll", "black shorthair"]),
           ("bunny", "rabbit", ["lop-eared", "Holland lop", "lionhead"])]
EN_PET_NAMES = ["Biscuit", "Pepper", "Mochi", "Luna", "Waffles", "Ziggy", "Olive", "Bruno", "Nacho", "Pickles",
                "Juniper", "Toast", "Maple", "Rocket", "Clementine", "Otis"]
EN_JOBS = [("data analyst", "analyst"), ("nurse practitioner", "nurse"), ("high school chemistry teacher", "teacher"),
           ("project manager", "manager"), ("UX designer", "designer"), ("sous chef", "chef"),
           ("physical therapist", "therapist"), ("software engineer", "engineer"), ("paralegal", "legal assistant"),
           ("park ranger", "ranger")]
EN_COMPANIES = ["Brightwave", "Northfield Health", "Cobalt Labs", "Greenleaf Foods", "Harbor Logistics",
                "Summit Analytics", "Bluebird Studio", "Ironwood Bank", "Pinecrest Clinic", "Atlas Robotics"]
EN_CITIES = [("Lisbon", "the old tram up the hill"), ("Kyoto", "the bamboo forest"), ("Reykjavik", "the hot springs"),
             ("Marrakech", "the night market"), ("Vancouver", "the seawall bike ride"), ("Prague", "the castle at dusk"),
             ("Hanoi", "the street food tour"), ("Cape Town", "Table Mountain"), ("Edinburgh", "the castle walk"),
             ("Buenos Aires", "the tango show"), ("Seoul", "the palace in the snow"), ("Istanbul", "the ferry on the Bosphorus")]
EN_HOBBIES = [("pottery", "a pottery class", "ceramics"), ("salsa", "salsa dancing lessons", "dance"),
              ("rock climbing", "an indoor climbing course", "climbing"), ("watercolor", "a watercolor workshop", "painting"),
              ("Italian", "an Italian conversation class", "language"), ("woodworking", "a woodworking course", "carpentry"),
              ("improv", "an improv comedy class", "comedy"), ("archery", "archery lessons", "archery"),
              ("sourdough baking", "a bread baking class", "baking"), ("photography", "a night photography course", "photos")]
EN_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
EN_BOOKS = [("The Overstory", "Richard Powers"), ("Pachinko", "Min Jin Lee"), ("Project Hail Mary", "Andy Weir"),
            ("Circe", "Madeline Miller"), ("The Remains of the Day", "Kazuo Ishiguro"), ("Educated", "Tara Westover"),
            ("Sapiens", "Yuval Noah Harari"), ("Klara and the Sun", "Kazuo Ishiguro"), ("Station Eleven", "Emily St. John Mandel"),
            ("The Name of the Wind", "Patrick Rothfuss")]
EN_ALLERGIES = [("shellfish", "shrimp tacos"), ("peanuts", "satay"), ("sesame", "hummus"), ("kiwi", "fruit salad"),
                ("gluten", "pasta nights"), ("dairy", "cheese boards"), ("eggs", "omelettes")]
EN_RELATIVES = [("mother", "mom"), ("grandfather", "grandpa"), ("younger brother", "brother"), ("aunt", "aunt"),
                ("older sister", "sister"), ("father-in-law", "father-in-law"), ("cousin", "cousin")]
EN_REL_NAMES = ["Linda", "Walter", "Sam", "Rosa", "Kenji", "Margaret", "Diego", "Fatima", "Pete", "Yuki"]
EN_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
             "November", "December"]
EN_INSTRUMENTS = [("cello", "string instrument"), ("saxophone", "horn"), ("piano", "keys"), ("ukulele", "little guitar"),
                  ("violin", "fiddle"), ("drums", "drum kit"), ("banjo", "banjo"), ("flute", "flute")]
EN_RACES = [("half marathon", "race"), ("10K", "run"), ("sprint triathlon", "triathlon"), ("marathon", "race"),
            ("trail run", "run"), ("charity 5K", "run")]
EN_PLACES = [("animal shelter", "shelter", "walking the dogs"), ("food bank", "pantry", "sorting donations"),
             ("public library", "library", "reading to kids"), ("community garden", "garden", "weeding the beds"),
             ("homeless shelter", "soup kitchen", "serving dinner"), ("hospital", "children's ward", "playing board games")]
EN_CARS = [("Honda Civic", "hatchback"), ("Subaru Outback", "station wagon"), ("Tesla Model 3", "electric car"),
           ("Ford pickup", "truck"), ("Mini Cooper", "little car"), ("Volvo XC60", "SUV"), ("Toyota Prius", "hybrid")]
EN_HOODS = ["Riverside", "the Heights", "Oak Park", "Old Town", "Eastgate", "Willow Creek", "the harbor district"]
EN_INJURIES = [("ankle", "twisted my", "playing basketball"), ("wrist", "fractured my", "skateboarding"),
               ("knee", "strained my", "playing soccer"), ("shoulder", "dislocated my", "playing volleyball"),
               ("back", "pulled a muscle in my", "moving furniture")]
EN_FAVORITES = [("movie", "film", ["Spirited Away", "Casablanca", "Amélie", "The Princess Bride", "Arrival"]),
                ("color", "colour", ["teal", "mustard yellow", "forest green", "burgundy", "lavender"]),
                ("season", "time of year", ["autumn", "spring", "winter", "early summer"]),
                ("dessert", "sweet", ["tiramisu", "lemon tart", "mango sticky rice", "baklava", "cheesecake"]),
                ("board game", "game", ["Catan", "Ticket to Ride", "Codenames", "Wingspan", "chess"])]
EN_SKILLS = [("sail", "sailing"), ("speak Japanese", "Japanese"), ("surf", "surfing"), ("code in Python", "programming"),
             ("play chess properly", "chess"), ("ski", "skiing"), ("knit", "knitting"), ("scuba dive", "diving")]
EN_SUBJECTS = [("astronomy", "the stars"), ("marine biology", "ocean life"), ("art history", "painters"),
               ("nutrition", "healthy eating"), ("psychology", "the mind"), ("accounting", "bookkeeping"),
               ("film editing", "making movies"), ("urban planning", "cities")]
EN_BANDS = [("Radiohead", "the arena"), ("Coldplay", "the stadium"), ("Florence and the Machine", "the amphitheater"),
            ("Arctic Monkeys", "the old theater"), ("Taylor Swift", "the stadium"), ("Bon Iver", "a tiny club"),
            ("the local jazz quartet", "the wine bar")]
EN_FEARS = [("heights", "tall buildings"), ("spiders", "anything with eight legs"), ("deep water", "the open sea"),
            ("thunderstorms", "loud storms"), ("flying", "planes"), ("clowns", "circus performers")]
EN_CUISINES = [("Ethiopian", "Lalibela"), ("Georgian", "Tbilisi Table"), ("Peruvian", "Casa Inca"),
               ("Sichuan", "Red Pepper House"), ("Lebanese", "Cedar Grill"), ("Korean barbecue", "Seoul Smoke"),
               ("Neapolitan pizza", "Forno Nero")]
EN_ART = [("a lighthouse at sunset", "seascape"), ("a portrait of my grandmother", "portrait"),
          ("a field of sunflowers", "landscape"), ("the city skyline at night", "cityscape"),
          ("a bowl of lemons", "still life")]
EN_KIDS = ["Lily", "Max", "Ava", "Noah", "Zoe", "Eli", "Mia", "Sam"]
EN_MILESTONES = [("learned to ride a bike without training wheels", "bike"), ("lost her first tooth", "tooth"),
                 ("started kindergarten", "school"), ("won the school spelling bee", "spelling bee"),
                 ("scored her first goal in soccer", "goal"), ("learned to swim", "swimming")]


def en_facts(rng: random.Random, a: str, b: str, used: dict) -> list[Fact]:
    """Every fact template once, for teller ``a`` talking to ``b`` (slots drawn from ``rng``)."""
    pick = lambda table: _pick(rng, table, used)
    out = []

    kind, animal, breeds = pick(EN_PETS)
    breed, pet = rng.choice(breeds), pick(EN_PET_NAMES)
    out.append(Fact(
        [(0, f"Guess what, we adopted a {breed} {kind} last weekend!"),
         (1, rng.choice(["Aww, that's wonderful! What did you name it?", "No way! Does it have a name yet?"])),
         (0, f"{pet}. The kids voted and that name won by a landslide.")],
        [(f"What is the name of {a}'s {animal}?", [2], "neighbour"),
         (f"What breed is the {kind} {a} adopted?", [0], "direct"),
         (f"What kind of pet did {a} get recently?", [0], "paraphrase")]))

    (job, short), old, new = pick(EN_JOBS), pick(EN_COMPANIES), pick(EN_COMPANIES)
    out.append(Fact(
        [(0, f"I finally handed in my notice at {old}."),
         (1, "Wow, big step! Where are you going?"),
         (0, f"{new} offered me a position as a {job}, I start next month.")],
        [(f"Where will {a} work after leaving {old}?", [2], "neighbour"),
         (f"What new job did {a} accept?", [2], "paraphrase"),
         (f"Which company did {a} quit?", [0], "paraphrase")]))

    hobby, course, field_ = pick(EN_HOBBIES)
    day = rng.choice(EN_DAYS)
    out.append(Fact(
        [(0, f"I signed up for {course}, every {day} evening after work.")],
        [(f"What class does {a} take on {day}s?", [0], "paraphrase"),
         (f"Has {a} started any {field_} lessons?", [0], "paraphrase")]))

    (city, sight), days = pick(EN_CITIES), rng.randint(3, 12)
    out.append(Fact(
        [(0, f"We just got back from {city}! {sight[0].upper() + sight[1:]} was unreal."),
         (1, "Jealous! How long were you there?"),
         (0, f"{days} days, though it rained on the last two.")],
        [(f"How long was {a}'s trip to {city}?", [2], "neighbour"),
         (f"Which city did {a} travel to recently?", [0], "paraphrase"),
         (f"What did {a} love most about {city}?", [0], "direct")]))

    title, author = pick(EN_BOOKS)
    out.append(Fact(
        [(0, f"I'm halfway through {title} by {author} and I can't put it down.")],
        [(f"What book is {a} reading at the moment?", [0], "paraphrase"),
         (f"Which {author} novel did {a} mention?", [0], "direct")]))

    allergen, dish = pick(EN_ALLERGIES)
    out.append(Fact(
        [(1, "You didn't touch the food at the party, everything okay?"),
         (0, f"Turns out I'm allergic to {allergen}, so no more {dish} for me.")],
        [(f"What food allergy does {a} have?", [1], "paraphrase"),
         (f"Why can't {a} eat {dish} anymore?", [1], "direct")]))

    (rel, rel_short), rname, month = pick(EN_RELATIVES), pick(EN_REL_NAMES), rng.choice(EN_MONTHS)
    out.append(Fact(
        [(0, f"Big news at home: my {rel} {rname} is moving in with us in {month}."),
         (1, "That's a big change! How do you feel about it?"),
         (0, "Honestly excited, the kids adore her and the spare room is finally getting used.")],
        [(f"Who is moving in with {a}?", [0], "paraphrase"),
         (f"When is {a}'s {rel_short} moving in?", [0], "direct")]))

    inst, inst_alt = pick(EN_INSTRUMENTS)
    out.append(Fact(
        [(0, f"I dusted off my old {inst} and started practicing again after ten years.")],
        [(f"What musical instrument does {a} play?", [0], "paraphrase"),
         (f"Did {a} go back to an old {inst_alt}?", [0], "paraphrase")]))

    (race, race_alt), rcity = pick(EN_RACES), pick(EN_CITIES)[0]
    minutes = rng.randint(25, 59)
    out.append(Fact(
        [(0, f"I ran the {race} in {rcity} on Sunday!"),
         (1, "Amazing!! How did it go?"),
         (0, f"Finished in two hours {minutes} minutes, my legs are still screaming.")],
        [(f"What was {a}'s finishing time in the {race}?", [2], "neighbour"),
         (f"Where did {a} run the {race}?", [0], "direct")]))

    place, place_alt, task = pick(EN_PLACES)
    out.append(Fact(
        [(0, f"I've started volunteering at the {place} on Saturdays, mostly {task}.")],
        [(f"Where does {a} volunteer?", [0], "direct"),
         (f"What does {a} do at the {place_alt} on weekends?", [0], "paraphrase")]))

    (car1, _), (car2, car2_alt) = pick(EN_CARS), pick(EN_CARS)
    out.append(Fact(
        [(0, f"We finally sold the old {car1}."),
         (1, "About time! What did you replace it with?"),
         (0, f"A used {car2}, it drives like a dream.")],
        [(f"What car did {a} buy to replace the {car1}?", [2], "neighbour"),
         (f"Does {a} have a new {car2_alt}?", [2], "paraphrase")]))

    hood, month2 = pick(EN_HOODS), rng.choice(EN_MONTHS)
    out.append(Fact(
        [(0, f"We signed the lease on a bigger place in {hood}, moving at the end of {month2}.")],
        [(f"Which neighborhood is {a} moving to?", [0], "paraphrase"),
         (f"When is {a} relocating?", [0], "paraphrase")]))

    part, how, sport = pick(EN_INJURIES)
    out.append(Fact(
        [(1, "Why the crutches in your photo?"),
         (0, f"I {how} {part} {sport} last week, so I'm stuck on the couch.")],
        [(f"How did {a} get injured?", [1], "paraphrase"),
         (f"What happened to {a}'s {part}?", [1], "direct")]))

    cat, cat_alt, values = pick(EN_FAVORITES)
    value = rng.choice(values)
    out.append(Fact(
        [(1, f"Okay, random question: what's your favorite {cat}?"),
         (0, f"Easy, {value}. Always has been.")],
        [(f"What is {a}'s favorite {cat_alt}?", [1], "neighbour")]))

    skill, skill_noun = pick(EN_SKILLS)
    out.append(Fact(
        [(0, f"My goal for next year is to finally learn to {skill}.")],
        [(f"What does {a} want to learn next year?", [0], "direct"),
         (f"Is {a} planning to take up {skill_noun}?", [0], "paraphrase")]))

    subject, subject_alt = pick(EN_SUBJECTS)
    out.append(Fact(
        [(0, f"I enrolled in an online course on {subject}, two evenings a week.")],
        [(f"What is {a} studying online?", [0], "direct"),
         (f"Is {a} taking a class about {subject_alt}?", [0], "paraphrase")]))

    band, venue = pick(EN_BANDS)
    out.append(Fact(
        [(0, f"We saw {band} at {venue} last night, I'm still buzzing."),
         (1, "Jealous! Did they play the old songs?"),
         (0, "Half the set was the old stuff, the crowd sang every word.")],
        [(f"Which band did {a} see in concert?", [0], "paraphrase"),
         (f"Did {band} play their old songs when {a} saw them?", [2], "neighbour")]))

    fear, fear_alt = pick(EN_FEARS)
    out.append(Fact(
        [(0, f"I've been terrified of {fear} since I was a kid, I can't explain it.")],
        [(f"What is {a} afraid of?", [0], "paraphrase"),
         (f"Does {a} have a phobia of {fear_alt}?", [0], "paraphrase")]))

    cuisine, rest = pick(EN_CUISINES)
    out.append(Fact(
        [(0, f"We found an amazing {cuisine} place near the station."),
         (1, "Ooh, what's it called?"),
         (0, f"{rest}. Go hungry, the portions are huge.")],
        [(f"What is the name of the {cuisine} restaurant {a} found?", [2], "neighbour"),
         (f"What kind of food does the new place {a} discovered serve?", [0], "paraphrase")]))

    art, art_kind = pick(EN_ART)
    out.append(Fact(
        [(0, f"I painted {art} for the community art show, it's hanging in the lobby now.")],
        [(f"What did {a} paint for the art show?", [0], "direct"),
         (f"Did {a} make a {art_kind} for the exhibition?", [0], "paraphrase")]))

    kid, (milestone, m_alt) = pick(EN_KIDS), pick(EN_MILESTONES)
    out.append(Fact(
        [(0, f"Proud parent moment: {kid} {milestone} yesterday!")],
        [(f"What did {a}'s child {kid} achieve?", [0], "paraphrase"),
         (f"Which of {a}'s kids had a {m_alt} milestone?", [0], "paraphrase")]))
    return out


EN_SMALLTALK = [
    "Hey! How have you been?", "Hi! It's been a while, how are things?", "Good morning! How was your week?",
    "What did you do this weekend?", "Did you do anything fun lately?", "What have you been up to?",
    "That's so good to hear!", "Oh wow, I didn't know that.", "Haha, I know exactly what you mean.",
    "That sounds like a lot, are you doing okay?", "I'm so happy for you!", "Tell me more about it!",
    "No way, really?", "That's amazing, you deserve it.", "Ugh, I'm sorry, that sounds rough.",
    "I was thinking about you the other day.", "We should get coffee soon.", "It's been such a busy week.",
    "Work has been crazy, honestly.", "I need a vacation so badly.", "The weather has been so weird lately.",
    "Did you see the game last night?", "I've been sleeping terribly.", "Same here, it's been one of those months.",
    "What are you doing for the holidays?", "I'm just trying to take it one day at a time.",
    "That's what I always say!", "You always know what to say.", "Let me know how it goes!",
    "I'll tell you all about it next time.", "Anyway, enough about me, how are you?", "I have to run, talk soon!",
    "Take care, talk to you later!", "Thanks for listening, it helps.", "It was really nice catching up.",
    "Do you have any plans for the summer?", "Not much, just relaxing at home mostly.",
    "I did a lot of cleaning and then watched a movie.", "We mostly stayed in, it was raining all weekend.",
    "I went for a long walk and called my parents.", "Just errands and laundry, the usual.",
    "I'm trying to cook more at home these days.", "Have you been watching anything good?",
    "I started a new show but I keep falling asleep during it.", "What would you do if you had a free day?",
    "Probably sleep in and then go to the beach.", "How is the family doing?", "Everyone is good, thanks for asking!",
    "The kids have been keeping me busy as always.", "My phone has been acting up all week.",
    "I can't believe it's already the end of the month.", "Time flies, doesn't it?", "What did you think of it?",
    "I thought it was pretty good, honestly.", "I'm not sure what I want to do next.",
    "You should do what makes you happy.", "That's a great idea, I might try that.", "Did you end up going?",
    "I did! It was better than I expected.", "I didn't, something came up at the last minute.",
    "How did you feel about that?", "Pretty nervous, but it went fine.", "Are you still doing yoga?",
    "On and off, I keep meaning to go more.", "What are you reading these days?", "Nothing right now, I need suggestions.",
    "I love that for you!", "This made my day, thank you.", "Hope you have a great week!",
    "I'm really proud of you.", "That's hilarious.", "I had the same thing happen last year.",
    "What time did you get home?", "Late, I was exhausted.", "Are you free next Saturday?",
    "I think so, what did you have in mind?", "Maybe brunch and a walk in the park?", "Sounds perfect.",
]


def en_session_opening(rng: random.Random) -> list[tuple[int, str]]:
    return [(0, rng.choice(EN_SMALLTALK[:6])), (1, rng.choice(EN_SMALLTALK[6:20]))]


# -- Chinese -------------------------------------------------------------------

ZH_NAMES = ["小林", "阿杰", "晓雯", "老王", "美玲", "子轩", "佳怡", "浩然", "思琪", "志强", "雨桐", "明轩", "欣怡",
            "俊杰", "诗涵", "宇航"]
ZH_PETS = [("小狗", "狗", ["金毛", "柯基", "柴犬", "边牧", "泰迪", "哈士奇"]),
           ("小猫", "猫", ["橘猫", "英短", "布偶猫", "暹罗猫", "狸花猫"]),
           ("小兔子", "兔子", ["垂耳兔", "侏儒兔", "狮子兔"])]
ZH_PET_NAMES = ["豆豆", "团子", "年糕", "可乐", "布丁", "球球", "汤圆", "芝麻", "奶茶", "花卷", "饺子", "雪球", "橙子", "旺财"]
ZH_JOBS = [("数据分析师", "分析"), ("护士", "护理"), ("高中化学老师", "老师"), ("项目经理", "管理"),
           ("交互设计师", "设计"), ("厨师", "做饭"), ("康复治疗师", "治疗"), ("软件工程师", "程序员"),
           ("律师助理", "法律"), ("导游", "带团")]
ZH_COMPANIES = ["星辰科技", "华安医疗", "蓝鲸数据", "绿叶食品", "远航物流", "云顶咨询", "青鸟设计", "海川银行",
                "松柏诊所", "天工机器人"]
ZH_CITIES = [("成都", "熊猫基地"), ("西安", "城墙骑行"), ("厦门", "鼓浪屿"), ("大理", "洱海骑车"), ("哈尔滨", "冰雪大世界"),
             ("桂林", "漓江竹筏"), ("青岛", "海边栈道"), ("重庆", "洪崖洞夜景"), ("苏州", "拙政园"), ("拉萨", "布达拉宫"),
             ("三亚", "潜水"), ("张家界", "玻璃栈道")]
ZH_HOBBIES = [("陶艺", "陶艺课", "手工"), ("拉丁舞", "拉丁舞课", "跳舞"), ("攀岩", "室内攀岩课", "运动"),
              ("水彩画", "水彩画班", "画画"), ("日语", "日语口语班", "外语"), ("木工", "木工课", "手工活"),
              ("书法", "书法班", "写字"), ("射箭", "射箭课", "射箭"), ("烘焙", "面包烘焙课", "做面包"),
              ("摄影", "夜景摄影课", "拍照")]
ZH_DAYS = ["周一", "周二", "周三", "周四", "周五", "周六", "周日"]
ZH_BOOKS = [("三体", "刘慈欣"), ("活着", "余华"), ("平凡的世界", "路遥"), ("围城", "钱钟书"), ("白鹿原", "陈忠实"),
            ("人类简史", "赫拉利"), ("百年孤独", "马尔克斯"), ("解忧杂货店", "东野圭吾"), ("红楼梦", "曹雪芹"),
            ("长安的荔枝", "马伯庸")]
ZH_ALLERGIES = [("海鲜", "小龙虾"), ("花生", "宫保鸡丁"), ("芒果", "芒果冰沙"), ("牛奶", "奶茶"), ("鸡蛋", "蛋炒饭"),
                ("芝麻", "芝麻汤圆"), ("坚果", "坚果月饼")]
ZH_RELATIVES = [("妈妈", "妈妈"), ("外公", "外公"), ("弟弟", "弟弟"), ("小姨", "小姨"), ("姐姐", "姐姐"),
                ("公公", "公公"), ("表哥", "表哥")]
ZH_MONTHS = ["一月", "二月", "三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月", "十一月", "十二月"]
ZH_INSTRUMENTS = [("大提琴", "弦乐"), ("萨克斯", "管乐"), ("钢琴", "琴"), ("尤克里里", "小吉他"), ("小提琴", "琴"),
                  ("架子鼓", "鼓"), ("古筝", "民乐"), ("笛子", "笛子")]
ZH_RACES = [("半程马拉松", "比赛"), ("十公里跑", "跑步"), ("铁人三项", "比赛"), ("全程马拉松", "比赛"),
            ("越野跑", "跑步"), ("公益五公里", "跑步")]
ZH_PLACES = [("流浪动物救助站", "救助站", "遛狗"), ("社区食物银行", "食物银行", "整理捐赠"),
             ("市图书馆", "图书馆", "给孩子讲故事"), ("社区菜园", "菜园", "除草浇水"),
             ("养老院", "敬老院", "陪老人聊天"), ("儿童医院", "医院", "陪小朋友玩")]
ZH_CARS = [("本田思域", "两厢车"), ("斯巴鲁森林人", "旅行车"), ("特斯拉", "电车"), ("皮卡", "皮卡"),
           ("五菱宏光", "面包车"), ("沃尔沃", "SUV"), ("丰田卡罗拉", "轿车"), ("比亚迪", "新能源车")]
ZH_HOODS = ["滨江", "高新区", "老城区", "东湖", "西溪", "大学城", "临港"]
ZH_INJURIES = [("脚踝", "崴了", "打篮球"), ("手腕", "骨折了", "玩滑板"), ("膝盖", "拉伤了", "踢足球"),
               ("肩膀", "脱臼了", "打排球"), ("腰", "扭到了", "搬家")]
ZH_FAVORITES = [("电影", "片子", ["千与千寻", "霸王别姬", "大话西游", "让子弹飞", "星际穿越"]),
                ("颜色", "色", ["墨绿色", "雾霾蓝", "酒红色", "奶白色", "薰衣草紫"]),
                ("季节", "时节", ["秋天", "春天", "冬天", "初夏"]),
                ("甜点", "甜品", ["提拉米苏", "双皮奶", "芒果班戟", "杨枝甘露", "蛋挞"]),
                ("桌游", "游戏", ["狼人杀", "卡坦岛", "三国杀", "剧本杀", "围棋"])]
ZH_SKILLS = [("帆船", "航海"), ("日语", "外语"), ("冲浪", "冲浪"), ("编程", "写代码"), ("下象棋", "象棋"),
             ("滑雪", "滑雪"), ("织毛衣", "编织"), ("潜水", "潜水")]
ZH_SUBJECTS = [("天文学", "星星"), ("海洋生物", "海里的动物"), ("艺术史", "画家"), ("营养学", "健康饮食"),
               ("心理学", "人的心理"), ("会计", "记账"), ("剪辑", "做视频"), ("城市规划", "城市")]
ZH_BANDS = [("五月天", "体育场"), ("周杰伦", "体育馆"), ("陈奕迅", "演唱会现场"), ("新裤子", "音乐节"),
            ("草东没有派对", "livehouse"), ("万能青年旅店", "小剧场"), ("本地的爵士乐队", "酒吧")]
ZH_FEARS = [("恐高", "高的地方"), ("蜘蛛", "八条腿的虫子"), ("深水", "大海"), ("打雷", "雷雨天"), ("坐飞机", "飞行"),
            ("小丑", "马戏团")]
ZH_CUISINES = [("云南菜", "彩云间"), ("新疆菜", "丝路食堂"), ("潮汕牛肉火锅", "牛大哥"), ("川菜", "辣妹子"),
               ("东北菜", "老铁家"), ("韩式烤肉", "首尔烤房"), ("日料", "深夜食堂")]
ZH_ART = [("夕阳下的灯塔", "海景"), ("奶奶的肖像", "人像"), ("一片向日葵花田", "风景"), ("城市夜景", "街景"),
          ("一盘柠檬", "静物")]
ZH_KIDS = ["乐乐", "朵朵", "豆豆", "天天", "果果", "小宝", "安安", "悠悠"]
ZH_MILESTONES = [("学会了不用辅助轮骑自行车", "骑车"), ("掉了第一颗牙", "换牙"), ("开始上幼儿园了", "上学"),
                 ("在学校拼写比赛拿了第一名", "比赛"), ("在足球赛里进了第一个球", "踢球"), ("学会了游泳", "游泳")]


def zh_facts(rng: random.Random, a: str, b: str, used: dict) -> list[Fact]:
    """The Chinese fact templates, once each, for teller ``a`` talking to ``b``."""
    pick = lambda table: _pick(rng, table, used)
    out = []

    kind, animal, breeds = pick(ZH_PETS)
    breed, pet = rng.choice(breeds), pick(ZH_PET_NAMES)
    out.append(Fact(
        [(0, f"告诉你个好消息，我们上周末领养了一只{breed}{kind}！"),
         (1, rng.choice(["哇，太可爱了吧！起名字了吗？", "真的假的！叫什么呀？"])),
         (0, f"叫{pet}，孩子们投票选的，全票通过。")],
        [(f"{a}家的{animal}叫什么名字？", [2], "neighbour"),
         (f"{a}领养的{kind}是什么品种？", [0], "direct"),
         (f"{a}最近养了什么宠物？", [0], "paraphrase")]))

    (job, short), old, new = pick(ZH_JOBS), pick(ZH_COMPANIES), pick(ZH_COMPANIES)
    out.append(Fact(
        [(0, f"我终于在{old}提了离职。"),
         (1, "好大的决定！那你下一步去哪？"),
         (0, f"{new}给了我一个{job}的职位，下个月入职。")],
        [(f"{a}离开{old}以后去哪里上班？", [2], "neighbour"),
         (f"{a}接受了什么新工作？", [2], "paraphrase"),
         (f"{a}从哪家公司辞职了？", [0], "paraphrase")]))

    hobby, course, field_ = pick(ZH_HOBBIES)
    day = rng.choice(ZH_DAYS)
    out.append(Fact(
        [(0, f"我报了一个{course}，每个{day}下班以后去上。")],
        [(f"{a}每个{day}晚上去上什么课？", [0], "paraphrase"),
         (f"{a}最近在学{field_}吗？", [0], "paraphrase")]))

    (city, sight), days = pick(ZH_CITIES), rng.randint(3, 12)
    out.append(Fact(
        [(0, f"我们刚从{city}回来！{sight}真的太震撼了。"),
         (1, "羡慕！你们去了多久？"),
         (0, f"{days}天，不过最后两天一直在下雨。")],
        [(f"{a}去{city}玩了几天？", [2], "neighbour"),
         (f"{a}最近去哪个城市旅游了？", [0], "paraphrase"),
         (f"{a}在{city}最喜欢什么？", [0], "direct")]))

    title, author = pick(ZH_BOOKS)
    out.append(Fact(
        [(0, f"我在看{author}的《{title}》，看了一半，根本停不下来。")],
        [(f"{a}最近在读什么书？", [0], "paraphrase"),
         (f"{a}提到的{author}的书是哪本？", [0], "direct")]))

    allergen, dish = pick(ZH_ALLERGIES)
    out.append(Fact(
        [(1, "聚会上你都没怎么吃东西，没事吧？"),
         (0, f"检查出来我对{allergen}过敏，以后{dish}是吃不了了。")],
        [(f"{a}对什么食物过敏？", [1], "paraphrase"),
         (f"为什么{a}不能再吃{dish}了？", [1], "direct")]))

    (rel, rel_short), month = pick(ZH_RELATIVES), rng.choice(ZH_MONTHS)
    out.append(Fact(
        [(0, f"家里有个大变化：我{rel}{month}要搬过来跟我们一起住。"),
         (1, "变化挺大的，你感觉怎么样？"),
         (0, "其实挺期待的，孩子们很黏她，空房间也终于有用了。")],
        [(f"谁要搬去和{a}一起住？", [0], "paraphrase"),
         (f"{a}的{rel_short}什么时候搬过来？", [0], "direct")]))

    inst, inst_alt = pick(ZH_INSTRUMENTS)
    out.append(Fact(
        [(0, f"我把十年没碰的{inst}翻出来了，又开始每天练。")],
        [(f"{a}会演奏什么乐器？", [0], "paraphrase"),
         (f"{a}是不是又开始练{inst_alt}了？", [0], "paraphrase")]))

    (race, race_alt), rcity = pick(ZH_RACES), pick(ZH_CITIES)[0]
    minutes = rng.randint(25, 59)
    out.append(Fact(
        [(0, f"我周日在{rcity}跑完了{race}！"),
         (1, "太厉害了！成绩怎么样？"),
         (0, f"两小时{minutes}分，现在腿还在疼。")],
        [(f"{a}的{race}成绩是多少？", [2], "neighbour"),
         (f"{a}在哪里跑的{race}？", [0], "direct")]))

    place, place_alt, task = pick(ZH_PLACES)
    out.append(Fact(
        [(0, f"我最近每周六去{place}做志愿者，主要是{task}。")],
        [(f"{a}在哪里做志愿者？", [0], "direct"),
         (f"{a}周末在{place_alt}做什么？", [0], "paraphrase")]))

    (car1, _), (car2, car2_alt) = pick(ZH_CARS), pick(ZH_CARS)
    out.append(Fact(
        [(0, f"我们终于把那辆旧{car1}卖掉了。"),
         (1, "早该换了！换了什么车？"),
         (0, f"买了一辆二手{car2}，开起来特别舒服。")],
        [(f"{a}卖掉{car1}以后买了什么车？", [2], "neighbour"),
         (f"{a}是不是新买了{car2_alt}？", [2], "paraphrase")]))

    hood, month2 = pick(ZH_HOODS), rng.choice(ZH_MONTHS)
    out.append(Fact(
        [(0, f"我们在{hood}租了一套大一点的房子，{month2}底搬家。")],
        [(f"{a}要搬到哪个区？", [0], "paraphrase"),
         (f"{a}什么时候搬家？", [0], "direct")]))

    part, how, sport = pick(ZH_INJURIES)
    out.append(Fact(
        [(1, "你照片里怎么拄着拐杖？"),
         (0, f"上周{sport}的时候{part}{how}，只能在沙发上躺着。")],
        [(f"{a}是怎么受伤的？", [1], "paraphrase"),
         (f"{a}的{part}怎么了？", [1], "direct")]))

    cat, cat_alt, values = pick(ZH_FAVORITES)
    value = rng.choice(values)
    out.append(Fact(
        [(1, f"随便问一句，你最喜欢的{cat}是什么？"),
         (0, f"这还用问，{value}，一直都是。")],
        [(f"{a}最喜欢的{cat_alt}是什么？", [1], "neighbour")]))

    skill, skill_noun = pick(ZH_SKILLS)
    out.append(Fact(
        [(0, f"我明年的目标是终于学会{skill}。")],
        [(f"{a}明年想学什么？", [0], "direct"),
         (f"{a}打算学{skill_noun}吗？", [0], "paraphrase")]))

    subject, subject_alt = pick(ZH_SUBJECTS)
    out.append(Fact(
        [(0, f"我报了一门{subject}的网课，每周两个晚上。")],
        [(f"{a}在网上学什么？", [0], "paraphrase"),
         (f"{a}是不是在上关于{subject_alt}的课？", [0], "paraphrase")]))

    band, venue = pick(ZH_BANDS)
    out.append(Fact(
        [(0, f"我们昨晚在{venue}看了{band}，现在还很激动。"),
         (1, "羡慕！他们唱老歌了吗？"),
         (0, "一半都是老歌，全场大合唱。")],
        [(f"{a}去看了谁的演出？", [0], "paraphrase"),
         (f"{a}看{band}的时候他们唱老歌了吗？", [2], "neighbour")]))

    fear, fear_alt = pick(ZH_FEARS)
    out.append(Fact(
        [(0, f"我从小就特别怕{fear}，说不清为什么。")],
        [(f"{a}害怕什么？", [0], "paraphrase"),
         (f"{a}是不是怕{fear_alt}？", [0], "paraphrase")]))

    cuisine, rest = pick(ZH_CUISINES)
    out.append(Fact(
        [(0, f"我们在地铁站附近发现了一家超好吃的{cuisine}。"),
         (1, "哇，店名叫什么？"),
         (0, f"叫{rest}，记得空着肚子去，分量特别大。")],
        [(f"{a}发现的那家{cuisine}叫什么名字？", [2], "neighbour"),
         (f"{a}新发现的餐厅是做什么菜的？", [0], "paraphrase")]))

    art, art_kind = pick(ZH_ART)
    out.append(Fact(
        [(0, f"我给社区画展画了一幅{art}，现在挂在大厅里。")],
        [(f"{a}给画展画了什么？", [0], "direct"),
         (f"{a}是不是画了一幅{art_kind}去参展？", [0], "paraphrase")]))

    kid, (milestone, m_alt) = pick(ZH_KIDS), pick(ZH_MILESTONES)
    out.append(Fact(
        [(0, f"骄傲时刻：{kid}昨天{milestone}！")],
        [(f"{a}的孩子{kid}有什么新进步？", [0], "paraphrase"),
         (f"{a}家哪个孩子在{m_alt}上有了进步？", [0], "paraphrase")]))
    return out


ZH_SMALLTALK = [
    "嗨！最近怎么样？", "好久不见，最近忙什么呢？", "早啊！这周过得怎么样？", "周末干什么了？", "最近有什么好玩的事吗？",
    "你最近在忙什么？", "听到这个真开心！", "哇，我都不知道。", "哈哈，我太懂你的意思了。", "听起来好累，你还好吗？",
    "真替你高兴！", "快跟我多说说！", "真的假的？", "太棒了，这是你应得的。", "唉，听着就难受。", "前几天我还想起你呢。",
    "我们找时间喝杯咖啡吧。", "这周真的太忙了。", "说实话工作最近忙疯了。", "我好想放个假。", "最近天气好奇怪。",
    "你看昨晚的比赛了吗？", "我最近睡得特别差。", "我也是，这个月就是这样。", "放假你打算干什么？",
    "我就一天一天慢慢来吧。", "我也总这么说！", "你总是知道该说什么。", "结果怎么样记得告诉我！", "下次再跟你细说。",
    "好啦，不说我了，你怎么样？", "我得先走了，回头聊！", "保重，下次聊！", "谢谢你听我说，好多了。", "今天聊得很开心。",
    "暑假有什么计划吗？", "没什么，大部分时间在家休息。", "我大扫除了一下，然后看了部电影。", "我们基本没出门，周末一直下雨。",
    "我出去走了很久，还给爸妈打了电话。", "就是跑跑腿洗洗衣服，老样子。", "我最近在努力多在家做饭。", "最近有什么好看的剧吗？",
    "我开始追一部新剧，但每次都看睡着。", "如果有一天空闲你想干嘛？", "大概先睡个懒觉再去海边。", "家里人都好吗？",
    "大家都挺好的，谢谢关心！", "孩子们还是让我忙得团团转。", "我的手机这周一直出毛病。", "不敢相信这个月又要过完了。",
    "时间过得真快啊。", "你觉得怎么样？", "说实话我觉得还不错。", "我还不知道下一步想干什么。", "做让你开心的事就好。",
    "好主意，我也想试试。", "你最后去了吗？", "去了！比想象中好。", "没去，最后一刻有事。", "你当时什么感觉？",
    "挺紧张的，不过还算顺利。", "你还在练瑜伽吗？", "断断续续的，一直想多去几次。", "你最近在看什么书？",
    "最近没看，求推荐。", "太适合你了！", "你让我今天心情变好了。", "祝你这周顺利！", "真为你骄傲。", "笑死我了。",
    "去年我也遇到过一样的事。", "你几点到家的？", "挺晚的，累坏了。", "下周六你有空吗？", "应该有，你想干嘛？",
    "要不吃个早午饭再去公园走走？", "完美。",
]


def zh_session_opening(rng: random.Random) -> list[tuple[int, str]]:
    return [(0, rng.choice(ZH_SMALLTALK[:6])), (1, rng.choice(ZH_SMALLTALK[6:20]))]


# -- assembly ------------------------------------------------------------------


def _pick(rng: random.Random, table: list, used: dict):
    """A value of ``table`` not used yet in this conversation when possible (confusers stay distinct)."""
    seen = used.setdefault(id(table), set())
    fresh = [i for i in range(len(table)) if i not in seen] or list(range(len(table)))
    i = rng.choice(fresh)
    seen.add(i)
    return table[i]


LANGS = {
    "en": (EN_NAMES, en_facts, EN_SMALLTALK, en_session_opening, "{speaker}: {text}"),
    "zh": (ZH_NAMES, zh_facts, ZH_SMALLTALK, zh_session_opening, "{speaker}：{text}"),
}


def conversation(lang: str, rng: random.Random, cid: str, sessions: int) -> dict:
    """One conversation: two speakers, ``sessions`` RecallFiles of turns, labelled questions."""
    names, facts_of, smalltalk, opening, line = LANGS[lang]
    a, b = rng.sample(names, 2)
    used: dict = {}
    # Both speakers tell every kind of fact (the confusers), some kinds twice.
    facts = [(0, f) for f in facts_of(rng, a, b, used)] + [(1, f) for f in facts_of(rng, b, a, used)]
    rng.shuffle(facts)
    per_session = -(-len(facts) // sessions)
    out_sessions, questions = [], []
    for s in range(sessions):
        file = f"{cid}_s{s + 1:02d}"
        turns: list[tuple[int, str]] = list(opening(rng))
        labels: list[tuple[str, list[int], str]] = []
        for teller, fact in facts[s * per_session:(s + 1) * per_session]:
            for _ in range(rng.randint(1, 4)):  # small talk between facts
                turns.append((rng.randint(0, 1), rng.choice(smalltalk)))
            base = len(turns)
            turns += [(teller if who == 0 else 1 - teller, text) for who, text in fact.turns]
            if rng.random() < 0.5:
                turns.append((1 - teller, rng.choice(smalltalk[6:16])))  # a reaction
            labels += [(q, [base + i for i in ev], kind) for q, ev, kind in fact.questions]
        turns += [(rng.randint(0, 1), rng.choice(smalltalk[30:36]))]
        speakers = (a, b)
        out_sessions.append({"file": file, "turns": [
            {"name": f"t{n + 1:03d}", "content": line.format(speaker=speakers[who], text=text)}
            for n, (who, text) in enumerate(turns)]})
        questions += [{"question": q, "type": kind, "evidence": [[file, f"t{i + 1:03d}"] for i in ev]}
                      for q, ev, kind in labels]
    return {"id": cid, "speakers": [a, b], "sessions": out_sessions, "questions": questions}


def corpus(lang: str, *, conversations: int = 8, sessions: int = 10, seed: int = 17) -> dict:
    rng = random.Random(f"{lang}-{seed}")
    convs = [conversation(lang, rng, f"c{n + 1:02d}", sessions) for n in range(conversations)]
    return {"lang": lang, "seed": seed, "conversations": convs}


def main() -> None:
    for lang in LANGS:
        data = corpus(lang)
        path = HERE / f"{lang}.json"
        path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        turns = sum(len(s["turns"]) for c in data["conversations"] for s in c["sessions"])
        qs = sum(len(c["questions"]) for c in data["conversations"])
        print(f"{path.name}: {len(data['conversations'])} conversations, {turns} turns, {qs} questions")


if __name__ == "__main__":
    main()
