title = “Hello”
note = ‘a — b’
value = 2
