def greet():
    print("hi")
