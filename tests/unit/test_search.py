import numpy as np
import pytest

from xlsent.search import nearest, p_at_1


def test_cosine_not_dot_product():
    # q = (1, 0.1). Dot product prefers the long key: q·(10, 10) = 11 > q·(1, 0) = 1.
    # Cosine prefers the aligned one: cos(q, (1, 0)) = 1/|q| = 0.995
    # > cos(q, (10, 10)) = 11 / (|q| · 14.142) = 0.774.
    queries = np.array([[1.0, 0.1]])
    keys = np.array([[10.0, 10.0], [1.0, 0.0]])
    scores, indices = nearest(queries, keys, k=2)
    norm_q = np.sqrt(1.01)
    assert indices.tolist() == [[1, 0]]
    assert scores[0] == pytest.approx([1 / norm_q, 11 / (norm_q * np.sqrt(200))], abs=1e-6)


def test_top_k_order():
    # Keys at 0°, 45° and 90°; a query at 80° is nearest 90°, then 45°, then 0°.
    keys = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    angle = np.deg2rad(80)
    queries = np.array([[np.cos(angle), np.sin(angle)]])
    scores, indices = nearest(queries, keys, k=3)
    assert indices.tolist() == [[2, 1, 0]]
    assert scores[0] == pytest.approx(np.cos(np.deg2rad([10, 35, 80])), abs=1e-6)


def test_inputs_unchanged():
    # float32 C-contiguous inputs are the case where a careless asarray would not copy.
    queries = np.array([[3.0, 4.0], [0.0, 2.0]], dtype=np.float32)
    keys = np.array([[5.0, 0.0], [0.0, 7.0]], dtype=np.float32)
    before = queries.copy(), keys.copy()
    nearest(queries, keys)
    p_at_1(queries, keys)
    np.testing.assert_array_equal(queries, before[0])
    np.testing.assert_array_equal(keys, before[1])


def test_k_clamped_to_number_of_keys():
    scores, indices = nearest(np.ones((3, 4)), np.eye(4)[:2], k=10)
    assert scores.shape == indices.shape == (3, 2)
    assert sorted(indices[0].tolist()) == [0, 1]


def test_p_at_1():
    # Query 0 and 1 find their own key; query 2 (closest to key 1) does not: 2/3.
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    queries = np.array([[0.9, 0.1], [0.1, 0.9], [0.0, 1.0]])
    assert p_at_1(queries, keys) == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("queries", "keys", "message"),
    [
        (np.ones((2, 3)), np.ones((2, 4)), "dimension"),
        (np.ones((2, 3)), np.ones((3, 3)), "same number of rows"),
        (np.array([[np.nan, 1.0]]), np.ones((1, 2)), "NaN"),
        (np.ones(3), np.ones(3), "2-D"),
    ],
)
def test_bad_input(queries, keys, message):
    with pytest.raises(ValueError, match=message):
        p_at_1(queries, keys)
