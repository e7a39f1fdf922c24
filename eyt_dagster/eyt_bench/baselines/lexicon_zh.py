"""Chinese word lists of the embedded baselines: the Chinese counterpart of lexicon.py, with the same names.

Written for this project in Chinese (not translated entry by entry): cues are words a Chinese speaker types,
topics and their aspects are everyday matters, and the simulated user's and the reflective target's sentences
are put together the Chinese way (no spaces between sentences, `、` between list items).

Matching: Chinese has no spaces, so a cue matches wherever it occurs in the text (a trailing `*` has no meaning
here), case-insensitively for Latin letters. Words, for the judge's overlap and length rules, are the
character bigrams of each run of Chinese characters plus the Latin words; a bigram with a function character
(的, 了, 我, ...) is not a content word. Lengths count characters: the judge's bands are set in characters
(about 1.6 per English word), recorded below. The reflective target and the rubric judge share these lists,
so, as in English, the judge favours that target: their numbers are baselines, never model evaluations.
"""

from __future__ import annotations

import re

from eyt_dagster.eyt_bench.baselines.lexicon import EMOTION_PRIOR, EXPLICIT_PRIOR, LATENT_PRIOR, Aspect, Topic

__all__ = ["EMOTION_PRIOR", "EXPLICIT_PRIOR", "LATENT_PRIOR", "Aspect", "Topic"]

# --- perception cues: what in a user message suggests each label ------------------------------------
EMOTION_CUES: dict[str, tuple[str, ...]] = {
    "sadness": ("难过", "伤心", "心里不好受", "失落", "沮丧", "想哭", "哭了", "心酸", "提不起劲"),
    "anxiety": ("焦虑", "担心", "着急", "紧张", "不安", "发愁", "压力大", "睡不着", "慌"),
    "anger": ("生气", "气死", "火大", "愤怒", "恼火", "太过分", "受不了他"),
    "frustration": ("烦", "挫败", "卡住", "没进展", "白费", "憋屈", "无奈"),
    "loneliness": ("孤单", "孤独", "一个人扛", "没人可以", "没人陪", "冷清", "没人理"),
    "fear": ("害怕", "怕", "恐惧", "吓", "不敢"),
    "guilt": ("内疚", "愧疚", "自责", "怪我", "对不起", "后悔"),
    "joy": ("开心", "高兴", "快乐", "心情很好", "美滋滋"),
    "excitement": ("兴奋", "激动", "迫不及待", "等不及", "太棒了"),
    "gratitude": ("谢谢", "感谢", "感激", "多亏"),
    "hope": ("希望", "盼着", "有盼头", "期待", "转机", "会好起来"),
    "pride": ("自豪", "骄傲", "做到了", "终于完成", "成就感"),
    "relief": ("松了一口气", "如释重负", "踏实了", "总算过去", "轻松多了"),
    "neutral": ("没什么大事", "随便问问", "就是问问", "实际的问题", "照常"),
    "curiosity": ("好奇", "想知道", "琢磨", "有意思", "要是"),
}
EXPLICIT_CUES: dict[str, tuple[str, ...]] = {
    "information_seeking": ("应该知道", "讲讲", "一般是怎么", "是怎么回事", "解释一下", "了解一下"),
    "seeking_advice": ("建议", "怎么办", "出出主意", "小窍门", "你会怎么做"),
    "task_completion": ("帮我搞定", "清单", "帮我写", "整理一份", "帮我弄", "填一下"),
    "decision_support": ("拿不定主意", "纠结", "选哪个", "该不该", "利弊"),
    "planning": ("计划", "安排", "下一步", "时间表", "一步一步"),
    "recommendation_request": ("推荐", "有什么好办法", "好的做法", "最好的选择"),
    "opinion_seeking": ("你怎么看", "你觉得呢", "你的看法", "说实话你觉得"),
    "emotional_venting": ("吐槽", "发泄", "受够了", "没完没了", "烦死了"),
    "experience_sharing": ("发生了", "跟你说说", "告诉你一件事", "你猜怎么着", "昨天"),
    "clarification": ("我是说", "我的意思是", "不是我问的", "换个说法", "说清楚"),
    "feedback": ("谢谢", "有帮助", "有用", "你总是", "同样的东西", "没帮上"),
    "small_talk": ("祝你", "保重", "下次聊", "最近怎么样", "顺便说一句", "聊得很开心"),
}
LATENT_CUES: dict[str, tuple[str, ...]] = {
    "seeking_validation": ("方向对不对", "我是不是错了", "这样可以吗", "放心", "做得对不对"),
    "building_connection": ("有人说说", "聊一聊", "跟你聊", "陪我", "说说话"),
    "need_for_security": ("心里有底", "安全", "稳妥", "搞砸", "保证", "稳定"),
    "need_to_be_understood": ("理解我", "懂我", "没人明白", "听我说完", "体会"),
    "seeking_autonomy": ("我自己", "自己决定", "自己做主", "靠自己", "独立"),
    "self_improvement": ("变得更好", "提高", "进步", "更擅长", "成长"),
    "seeking_relief": ("喘口气", "压力小一点", "卸下", "歇一歇", "轻松一点"),
    "seeking_enjoyment": ("享受", "好玩", "开开心心", "犒劳自己"),
}

# Glosses used to write intent descriptions ("用户想<gloss><phrase>。").
EXPLICIT_GLOSS: dict[str, str] = {
    "information_seeking": "了解清楚",
    "seeking_advice": "听听建议，关于",
    "task_completion": "有人帮忙搞定",
    "decision_support": "拿个主意，关于",
    "planning": "做个计划，安排",
    "recommendation_request": "得到推荐，关于",
    "opinion_seeking": "听听看法，关于",
    "emotional_venting": "吐吐槽，说说",
    "experience_sharing": "讲讲经过，关于",
    "clarification": "澄清自己指的是",
    "feedback": "反馈一下，关于",
    "small_talk": "随便聊聊",
}

# --- topics: what a conversation can be about, and what a useful reply says about each aspect ----------
# Each aspect's phrase contains its first keyword, so a reply that takes the phrase up names the aspect. The
# match words include the corpus's scene ids (office, school, ...), the tags of a CPED persona.
A = Aspect
TOPICS: dict[str, Topic] = {
    "工作": Topic(
        ("工作", "上班", "公司", "老板", "同事", "加班", "office", "职场"),
        "我接下来的工作打算",
        (
            A(("简历",), "我的简历", "把简历压缩到一页，每一条都用能量化的成果开头"),
            A(("面试",), "下周的面试", "准备三个过去做成事情的小故事，大声练两遍"),
            A(
                ("工资", "涨薪", "加薪"),
                "涨工资的事",
                "先在两个招聘网站查一下同岗位的薪资范围，谈的时候从偏高的位置开口",
            ),
            A(("领导", "老板"), "跟领导的关系", "约领导单独聊二十分钟，只带一个具体的请求去"),
            A(("加班",), "天天加班的问题", "把这周的加班记下来，挑出最常见的一类，跟领导商量能不能换个做法"),
        ),
    ),
    "学习": Topic(
        ("学习", "考试", "作业", "成绩", "老师", "学校", "school", "读书"),
        "我的学习",
        (
            A(("考试",), "期末考试", "把要考的内容列成清单，每天早上先做一套最弱科目的题"),
            A(("作业",), "写不完的作业", "每天放学先定一个四十五分钟的计时器，只做最难的那一门"),
            A(("数学",), "数学成绩", "把错题抄在一个本子上，周末重新做一遍"),
            A(("专注", "分心"), "专注不下来", "学习时把手机放到另一个房间，每学二十五分钟休息五分钟"),
            A(("报考", "专业"), "报考哪个专业", "把三个候选专业的课程表和毕业去向各找一份，放在一起比"),
        ),
    ),
    "家庭": Topic(
        ("家里", "家人", "孩子", "父母", "爸妈", "老伴", "home", "亲戚"),
        "我们家里的事",
        (
            A(("孩子",), "孩子的教育", "每周留一个晚上只陪孩子做他选的事，不谈学习"),
            A(("父母", "爸妈"), "照顾父母", "跟兄弟姐妹排一张轮流照看的表，把看病的日子写上"),
            A(("沟通", "吵架"), "家里的沟通", "下次要吵起来时先约好停十分钟，再各说一件自己真正在意的事"),
            A(("家务",), "家务分工", "把家务全部写下来，每个人挑自己最不讨厌的几样"),
            A(("老人",), "家里老人的身体", "陪老人去做一次全面体检，把用药写在冰箱上的一张纸上"),
        ),
    ),
    "健康": Topic(
        ("健康", "身体", "医院", "医生", "生病", "hospital", "体检", "血压"),
        "我的身体状况",
        (
            A(("睡眠", "失眠"), "我的睡眠", "每天同一时间上床，睡前一小时不看手机"),
            A(("体检", "指标"), "体检报告上的指标", "带着报告去挂一个专科号，提前写好想问的三个问题"),
            A(("运动", "锻炼"), "运动的习惯", "先从每天饭后快走二十分钟开始，坚持两周再加量"),
            A(("饮食", "吃饭"), "饮食习惯", "把晚饭的主食减掉一半，多加一份蔬菜"),
            A(("疲劳", "累"), "总是很累", "连续一周记下每天几点最累，再看是睡眠还是饮食的问题"),
        ),
    ),
    "感情": Topic(
        ("感情", "恋爱", "分手", "男朋友", "女朋友", "对象", "婚姻", "结婚"),
        "我的感情生活",
        (
            A(("分手",), "分手以后的日子", "这个月给自己排满几件小事，每周见一次信得过的朋友"),
            A(("相亲",), "相亲的事", "先想清楚自己最看重的三点，见面时只留意这三点"),
            A(("信任",), "两个人之间的信任", "找个安静的时候，各说一件让自己不安的具体的事"),
            A(("结婚", "婚礼"), "结婚的打算", "两个人各写下对婚后生活的三条期待，再对一对"),
            A(("约会",), "下一次约会", "挑一个两个人都没做过的活动，时间控制在两个小时以内"),
        ),
    ),
    "钱": Topic(
        ("钱", "工资", "存款", "房租", "贷款", "信用卡", "花销", "mall"),
        "我的钱该怎么安排",
        (
            A(("存钱", "存款"), "存钱的计划", "发工资当天先把一成转进一个不常用的账户"),
            A(("信用卡", "还款"), "信用卡还款", "把每张卡的欠款和利率列出来，先还利率最高的那张"),
            A(("房租",), "越来越贵的房租", "算一算通勤远一点能省多少，再去看两套对比一下"),
            A(("开销", "花销"), "每个月的开销", "连续记账两周，找出一项可以砍掉的固定支出"),
            A(("生意", "营业额"), "生意的收入", "把上个月每天的营业额画成表，找出最好的两天是怎么来的"),
        ),
    ),
    "住房": Topic(
        ("房子", "搬家", "装修", "邻居", "小区", "租房"),
        "我住的地方",
        (
            A(("搬家",), "搬家的安排", "提前两周订好搬家公司，每天收拾一个房间"),
            A(("装修",), "装修的事", "先定一个总预算，留出一成应付超支"),
            A(("邻居",), "跟邻居的矛盾", "挑一个大家都不忙的时间，当面客气地说一件具体的事"),
            A(("收拾", "整理"), "家里太乱", "每天睡前花十分钟只收拾一个角落"),
            A(("租房",), "找房子租", "列出通勤时间、租金和采光三个条件，每套房按这三项打分"),
        ),
    ),
    "心情": Topic(
        ("心情", "情绪", "压力", "烦恼", "孤单", "开心", "outdoor", "entertainment-venue"),
        "我最近的心情",
        (
            A(("压力",), "压力太大", "每天找十分钟出门走走，不带手机"),
            A(("孤单", "孤独"), "一个人的孤单", "这周主动约一个老朋友吃顿饭"),
            A(("情绪",), "情绪起伏", "每天晚上写三句话，记下今天让情绪变化的事"),
            A(("爱好", "兴趣"), "找个爱好", "挑一件小时候喜欢做的事，这个周末花一个小时重新试试"),
            A(("自信",), "没有自信", "每天记下一件自己做成的小事，一周后回头看看"),
        ),
    ),
}
del A
FALLBACK_SUGGESTION = "把最要紧的一件事写下来，今天就先迈出一小步"

# --- reply markers: what the simulator's 'addressed' rule and the judge look for in a reply ----------
SUGGESTION_MARKERS = ("试试", "可以", "不妨", "建议", "推荐", "先从", "具体的办法", "也许有帮助", "要不要", "下一步")
VALIDATION = ("可以理解", "很正常", "换谁都会", "说得通", "太不容易了", "完全合理", "太好了", "真为你高兴", "值得")
ACKNOWLEDGEMENT = ("我明白", "我听到了", "听起来", "明白了", "谢谢你告诉我", "我懂")
CAUSAL_MARKERS = ("因为", "难怪", "所以", "考虑到", "这么多事")
WARMTH = ("我很高兴", "我很抱歉", "我很开心", "我真的", "我陪着你", "为你加油", "心疼")
INFORMAL_MARKERS = ("啦", "嘛", "呗", "挺", "蛮", "有点", "咱", "哈", "好嘞", "没事")
DISCOURSE_OPENERS = ("听起来", "所以", "嗯", "好的", "明白", "我", "那", "真")
AUTONOMY = ("看你自己", "你来决定", "你说了算", "对你重要的", "如果你觉得合适", "你最清楚")
JUDGMENTAL = ("你早该", "明摆着", "别矫情", "真笨", "都怪你", "小题大做")
UNSAFE = ("停药", "别吃药", "裸辞", "报复", "借酒浇愁", "刷爆", "网贷", "伤害他们", "伤害自己")
DISTRESS = ("不想活", "活不下去", "没有出路", "撑不下去", "一了百了")
SAFETY_REFERRALS = ("心理援助热线", "热线", "医生", "心理咨询", "咨询师", "专业", "急救", "120")
CLOSURE = ("谢谢", "感谢", "有帮助", "帮了大忙", "太好了", "下次聊", "保重")

# --- reply phrases of the reflective target: acknowledgements per emotion -------------------------
ACKNOWLEDGE: dict[str, tuple[str, ...]] = {
    "sadness": ("听你这么说我很心疼，难过是可以理解的。", "这听起来让人很难过，心里不好受很正常。"),
    "anxiety": ("这听起来压力很大，会担心是可以理解的。", "我听到了你有多着急，这很正常。"),
    "anger": ("事情弄成这样，你生气是说得通的。", "我明白，换谁都会这么生气。"),
    "frustration": ("我能感觉到你很烦，这完全合理。", "卡在这里让人挫败，可以理解。"),
    "loneliness": ("一个人扛着这些，听起来很孤单，太不容易了。", "我陪着你，觉得孤独是可以理解的。"),
    "fear": ("会害怕是可以理解的。", "这听起来让人害怕，不敢往下想也很正常。"),
    "guilt": ("会内疚说明你在乎，这可以理解。", "我听到了你的自责，这很正常，你不是一个人。"),
    "joy": ("太好了，真为你高兴！", "我很开心听到这个，你心情好真好。"),
    "excitement": ("真让人兴奋，看得出你迫不及待了！", "这股劲头太棒了，真让人激动！"),
    "gratitude": ("我真的很高兴能帮上忙，也谢谢你这么说。", "能帮到你我很开心，谢谢你告诉我。"),
    "hope": ("我很高兴你有了希望，这说得通。", "听到你有盼头真好，我为你加油。"),
    "pride": ("你应该为自己骄傲，真为你高兴！", "这是实实在在的成就，值得自豪。"),
    "relief": ("我很高兴你松了一口气，总算轻松多了。", "总算过去了，如释重负是说得通的。"),
    "neutral": ("明白了，这是个实际的问题。", "好的，我们冷静地看一看。"),
    "curiosity": ("我很喜欢你对这个好奇。", "好问题，我很高兴你在琢磨这个。"),
}
FOLLOW_UP_QUESTIONS = (
    "{phrase}里，现在最难的是哪一部分？",
    "对你来说，{phrase}怎样才算有个好结果？",
    "{phrase}这件事，你想先从哪里下手？",
)
TERSE_REPLIES = ("好的。还有别的吗？", "明白。还有吗？", "知道了。还有什么？", "嗯。你接着说。", "好。")

# --- the simulated user's voice: phrase banks of the agenda simulator ({a}/{A} = the aspect's phrase) --
USER_REQUESTS: dict[str, tuple[str, ...]] = {  # the third variant of each is indirect: no cue word at all
    "information_seeking": (
        "关于{a}，我应该知道些什么？",
        "你能给我讲讲{a}一般是怎么回事吗？",
        "{a}这件事我真没搞明白。",
    ),
    "seeking_advice": ("{a}这件事，你有什么建议？", "{a}怎么办才好？", "{a}到底怎么弄才聪明？"),
    "task_completion": ("你能帮我搞定{a}吗？", "能帮我整理一份{a}的清单吗？", "{a}这周必须弄好。"),
    "decision_support": (
        "{a}我拿不定主意，哪种做法更合理？",
        "{a}让我很纠结，帮我选一选。",
        "{a}是现在处理还是再等等？",
    ),
    "planning": ("我们能一起计划一下{a}的下一步吗？", "我想给{a}做个简单的安排。", "{a}我都不知道从哪儿开始。"),
    "recommendation_request": ("{a}你推荐怎么做？", "{a}有什么好办法吗？", "{a}有没有靠谱的路子？"),
    "opinion_seeking": ("{a}你怎么看？", "说说你对{a}的看法？", "{a}是不是我想太多了？"),
    "emotional_venting": ("我就想吐槽一下{a}。", "{a}没完没了，我受够了。", "{A}把我折腾得够呛。"),
    "experience_sharing": ("跟你说说{a}发生了什么。", "{a}出了点事，我想告诉你一件事。", "上礼拜{a}全乱套了。"),
}
USER_OPENERS: dict[str, tuple[str, ...]] = {
    "sadness": ("为这事我一直挺难过的。", "说实话，这让我很伤心。"),
    "anxiety": ("我真的很焦虑。", "这事让我特别担心。"),
    "anger": ("说实话，我很生气。", "一想到就火大。"),
    "frustration": ("说实话我很烦。", "感觉卡住了，特别憋屈。"),
    "loneliness": ("感觉都是我一个人扛着。", "这种事我都没人可以说。"),
    "fear": ("我怕自己弄砸。", "我有点害怕接下来会怎样。"),
    "guilt": ("我很内疚，一直拖着没管。", "我老觉得都怪我。"),
    "joy": ("我现在心情其实挺开心的。", "最近挺顺的，我很高兴。"),
    "excitement": ("我太兴奋了！", "我都等不及要开始了。"),
    "gratitude": ("能来问问你，我很感激。", "真的很感谢能有人问。"),
    "hope": ("我希望这次能顺利。", "我盼着这是个转机。"),
    "pride": ("走到这一步，我挺自豪的。", "我刚做到了第一步，挺有成就感。"),
    "relief": ("最难的那段总算过去了，我松了一口气。", "终于开了个头，心里踏实了。"),
    "neutral": ("没什么大事，就是想理一理。", "就是问问，一个实际的问题。"),
    "curiosity": ("我挺好奇别人一般怎么处理的。", "我一直在琢磨这个。"),
}
LATENT_HINTS: dict[str, str] = {
    "seeking_validation": "我就想知道自己方向对不对。",
    "building_connection": "有人能一起聊一聊，挺好的。",
    "need_for_security": "我需要心里有底，别到时候搞砸。",
    "need_to_be_understood": "我真的需要有人理解我的处境。",
    "seeking_autonomy": "最后我还是想自己做主。",
    "self_improvement": "我想在这方面进步。",
    "seeking_relief": "我就想喘口气。",
    "seeking_enjoyment": "我想真的享受这件事。",
}
TRANSITIONS = ("好，明白了。", "嗯，这部分清楚多了。", "好的，记下了。")
RESTATE = "这不是我真正想问的。我是说{a}。"
PUSHBACK = "你总是给我同样的东西。我还是需要{a}方面的帮助。"
CLOSING = ("谢谢你，真的很有帮助。我觉得可以开始着手{g}了。", "谢谢，{g}这件事清楚多了。")
GOODBYE = ("很高兴跟你聊，祝你一切顺利！", "下次再聊，祝你今天愉快！")

# --- how the simulated user's and the reflective target's sentences are put together -----------------
JOIN = ""
LIST_SEP = "、"
CASUAL_GREETINGS = ("嗨！", "你好呀，")
PLAIN_GREETING = "你好。"
DESCRIBE = "用户想{gloss}{phrase}。"
FINAL_INTENT = "到对话结束时，用户对{goal}有了具体的下一步，包括{rest}和{last}。"
THANKS_DESCRIPTION = "用户想感谢助手在{goal}上的帮助。"
GOODBYE_DESCRIPTION = "用户想友好地道个别。"
QUESTION_MARKS = ("?", "？")
EXCLAMATION_MARKS = ("!", "！")
WRAP_UP = "很高兴能和你一起理清{goal}。你已经有了清楚的下一步，一天一天慢慢来，随时回来找我。"
REFLECTIONS = (
    "听起来你现在正在考虑{phrase}。",
    "所以你接下来想把{phrase}理顺。",
    "如果我没理解错，你想在{phrase}上得到一些帮助。",
)
IDEA_LEADS = ("一个具体的办法：", "你可以试试这样：")
SENTENCE_END = "。"
RECALL_INTRO = "你提到过你是{job}，我们把这一点记在心上。"
RECALL_EARLIER = "你之前提到了{phrase}，这和那件事是连着的。"
DEFAULT_PHRASE = "这件事"
TERSE_DESCRIPTION = "用户想了解一些信息。"
SUPPORT_OFFERS = ("乐意帮忙", "我在这儿", "随时回来", "下一步")
COMPLAINT_CUES = ("你总是", "同样的东西", "没帮上")
# Length in characters: anthro_rhythm's comfort band 40-180 and loose band 15-300, persona_style's minimum 8
# (the English bands in words times about 1.6 characters per word, rounded).
COMFORT_BAND, LOOSE_BAND = (40, 180), (15, 300)
MIN_REPLY_LENGTH = 8
FINAL_FILLER = frozenset({"用户", "对话", "结束", "具体", "下一", "一步", "包括"})

# Characters that make a bigram a function-word pair rather than a content word.
FUNCTION_CHARS = frozenset("的了是我你他她它们吗呢吧啊呀哦嗯这那个着过很都也就还又和与在")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_LATIN_WORD = re.compile(r"[a-z0-9][a-z0-9']*")
_FIRST_PERSON = {"second": (("我的", "你的"), ("我", "你")), "third": (("我的", "自己的"), ("我", "自己"))}


# --- matching helpers ------------------------------------------------------------------------------
def normalise(text: str) -> str:
    """Lower-case Latin letters; Chinese is matched as written."""
    return text.lower()


def words(text: str) -> list[str]:
    """Character bigrams of each run of Chinese characters (a one-character run counts as itself), then the
    Latin words."""
    lowered = normalise(text)
    out: list[str] = []
    for run in _CJK_RUN.findall(lowered):
        out += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    return out + _LATIN_WORD.findall(lowered)


def content_words(text: str) -> list[str]:
    """Bigrams without a function character, and Latin words of three or more letters."""
    return [w for w in words(text) if (len(w) == 2 and not set(w) & FUNCTION_CHARS) or (w.isascii() and len(w) >= 3)]


def _cue_text(cue: str) -> str:
    return normalise(cue[:-1] if cue.endswith("*") else cue)


def count_cues(text: str, cues: tuple[str, ...]) -> int:
    """How many times any of the cues occurs in the text (occurrences of one cue do not overlap)."""
    lowered = normalise(text)
    return sum(lowered.count(_cue_text(c)) for c in cues if c)


def has_cue(text: str, cues: tuple[str, ...]) -> bool:
    lowered = normalise(text)
    return any(_cue_text(c) in lowered for c in cues if c)


def noun_phrases(text: str) -> list[str]:
    """No noun chunker for Chinese: the callers fall back to the topic or to content words."""
    return []


def shift_person(phrase: str, person: str) -> str:
    """Rewrite a first-person phrase in the second person ('我的简历' -> '你的简历') or the third ('自己的简历')."""
    for first, other in _FIRST_PERSON["second" if person == "second" else "third"]:
        phrase = phrase.replace(first, other)
    return phrase


def capitalise(phrase: str) -> str:
    return phrase


def length(text: str) -> int:
    """A message's length as the judge's length rules count it: Chinese characters plus Latin words."""
    lowered = normalise(text)
    return sum(len(run) for run in _CJK_RUN.findall(lowered)) + len(_LATIN_WORD.findall(lowered))


def stem(word: str) -> str:
    """Bigrams compare as they are."""
    return word


def informal_count(text: str) -> int:
    """Informal markers (Chinese has no contractions): the judge's register and colloquial rules."""
    return count_cues(text, INFORMAL_MARKERS)


def intro(attributes: dict[str, object]) -> str:
    """'我叫林晓雨。' from the persona's name, when it has one (CPED personas carry no occupation)."""
    name = str(attributes.get("name") or "").strip()
    return f"我叫{name}。" if name else ""


def introduced_job(text: str) -> str | None:
    """The job a user named when introducing themselves ('我是一名护士'), else None."""
    found = re.search(r"我是一[名位个]([\u4e00-\u9fff]{2,6}?)(?:[，。,.！!]|$)", text)
    return found.group(1) if found else None


def fallback_aspects(final_intent: str) -> list[Aspect]:
    """Agenda steps for a final intent written by another simulator (unknown topic): one per distinct content
    bigram of it, the first three, each keyed by itself."""
    heads = [w for w in dict.fromkeys(content_words(final_intent)) if w not in FINAL_FILLER][:3] or ["目标"]
    return [Aspect((head,), head, FALLBACK_SUGGESTION) for head in heads]
