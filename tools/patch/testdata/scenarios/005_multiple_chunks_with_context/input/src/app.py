def one():
    return 1


def two():
    x = 2
    return x


def three():
    return 3
