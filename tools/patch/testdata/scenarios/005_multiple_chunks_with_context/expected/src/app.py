def one():
    return 10


def two():
    x = 2
    return x * 20


def three():
    return 3
