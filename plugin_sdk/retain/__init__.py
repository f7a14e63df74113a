"""The Retain Job: observations in, entities, relations, facts and Compiled Truth out."""
