from concurrent.futures import ThreadPoolExecutor

from backend.retrieval.tokenize import ENGLISH_STOPWORDS, Tokenizer


def test_stems_inflections_to_one_term():
    tokenizer = Tokenizer()
    assert tokenizer.tokenize("cycling cycles") == ["cycl", "cycl"]
    assert tokenizer.tokenize("Running") == tokenizer.tokenize("runs") == ["run"]


def test_stemming_can_be_turned_off():
    assert Tokenizer(stem=False).tokenize("Running cycles") == ["running", "cycles"]


def test_removes_stopwords_and_lowercases():
    assert Tokenizer().tokenize("The Cat is ON the mat") == ["cat", "mat"]
    assert Tokenizer().tokenize("it was the one that they had") == ["one"]


def test_stopwords_are_checked_before_stemming():
    # "was" would stem to "wa" and slip past a stopword check done after stemming.
    assert Tokenizer().tokenize("was") == []
    assert "was" in ENGLISH_STOPWORDS


def test_keeps_numbers_and_splits_hyphenated_terms():
    tokenizer = Tokenizer()
    assert tokenizer.tokenize("COVID-19 in 2020") == ["covid", "19", "2020"]
    assert tokenizer.tokenize("IL-6 and TNF-α levels of 3.5 mg") == [
        "il",
        "6",
        "tnf",
        "α",
        "level",
        "3",
        "5",
        "mg",
    ]


def test_punctuation_and_underscores_separate_words():
    assert Tokenizer(stem=False).tokenize("alpha,beta;gamma_delta (epsilon)") == [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
    ]


def test_handles_non_english_letters():
    tokenizer = Tokenizer(stem=False)
    assert tokenizer.tokenize("Ärzte überprüfen Straße") == ["ärzte", "überprüfen", "strasse"]
    assert tokenizer.tokenize("Привет, мир") == ["привет", "мир"]
    assert tokenizer.tokenize("東京 2024") == ["東京", "2024"]


def test_chinese_and_japanese_are_indexed_as_character_pairs():
    """Written without spaces, a run of their characters is a clause no question repeats; its pairs are shared."""
    tokenizer = Tokenizer()
    document = tokenizer.tokenize("これは東京都の天気について説明する文章です。")
    assert {"東京", "天気"} <= set(document) and set(tokenizer.tokenize("東京の天気")) & set(document) == {
        "東京", "天気", "の天"
    }
    assert tokenizer.tokenize("Python用于测试 running") == ["python", "用于", "于测", "测试", "run"]
    assert tokenizer.tokenize("字") == ["字"]
    assert tokenizer.tokenize("한국어 텍스트") == ["한국어", "텍스트"]  # Hangul is written with spaces


def test_compatibility_forms_match_their_plain_spelling():
    tokenizer = Tokenizer()
    assert tokenizer.tokenize("ﬁnance") == tokenizer.tokenize("finance")
    assert tokenizer.tokenize("２０２０") == ["2020"]


def test_text_without_words_gives_no_terms():
    assert Tokenizer().tokenize("") == []
    assert Tokenizer().tokenize(" ... -- !!") == []


def test_signature_changes_with_stemming():
    assert Tokenizer().signature == Tokenizer().signature
    assert "cjk=bigrams" in Tokenizer().signature  # terms indexed before the pairs are rebuilt
    assert Tokenizer(stem=True).signature != Tokenizer(stem=False).signature


def test_shared_between_threads_gives_the_single_thread_result():
    tokenizer = Tokenizer()
    texts = [
        f"connected connections connecting generalizations {number} organizational" for number in range(2000)
    ]
    expected = [Tokenizer().tokenize(text) for text in texts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(tokenizer.tokenize, texts)) == expected
