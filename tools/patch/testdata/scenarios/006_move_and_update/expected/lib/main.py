def greet():
    print("hello")
