build-reduce/engine/error.o: engine/error.c engine/ember.h
engine/ember.h:
