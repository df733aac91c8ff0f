Feature: Screens that stay true
  A button acts on the video it was under, every press is answered, "not enough coins" offers a way
  to buy, a failure is told in a few words from a fixed list, never the text of an error, and the
  small things a user expects are there: in English and in Russian alike.

  Background:
    Given the price list:
      | copies | coins per copy |
      | 2      | 5              |
      | 5      | 4              |
      | 10     | 3              |

  Scenario Outline: A choice under an older video orders copies of that video (<language>)
    Given the user's Telegram speaks <language>
    And the user holds 50 coins
    When the user sends a video of 3 MB and then a video of 4 MB
    And the user chooses 5 copies under the first video
    Then the user is shown "<quote>"
    And the quote is for the video of 3 MB

    Examples:
      | language | quote                                |
      | English  | 5 copies at 4 coins each: 20 coins.  |
      | Russian  | 5 копий по 4 монеты: всего 20 монет. |

  Scenario Outline: Cancel under an order already done says so (<language>)
    Given the user's Telegram speaks <language>
    And the user holds 50 coins
    When the user sends a video and chooses 2 from the offered numbers of copies
    And the user presses the confirm button
    And the copies are made and delivered
    And the user presses Cancel under the accepted order
    Then the user is shown "<answer>"

    Examples:
      | language | answer                                                              |
      | English  | This order is already finished, so there is nothing left to cancel. |
      | Russian  | Этот заказ уже выполнен, отменять нечего.                           |

  Scenario: A quote whose price expired loses its Confirm button, whichever edge sends then
    Given the user holds 50 coins
    When the user sends a video and chooses 5 from the offered numbers of copies
    And the bot's messages are sent and the edge that sent them stops
    And the quote's price expires
    Then the next edge is told to take the quote's buttons off, once

  Scenario: A quote confirmed in time loses its buttons with the press, not again at its expiry
    Given the user holds 50 coins
    When the user sends a video and chooses 5 from the offered numbers of copies
    And the bot's messages are sent and the edge that sent them stops
    And the user presses the confirm button under the quote
    And the bot's messages are sent and the edge that sent them stops
    And the quote's price expires
    Then no edge is told to take the quote's buttons off again

  Scenario Outline: Not enough coins offers the coin packages (<language>)
    Given the user's Telegram speaks <language>
    And the user holds 10 coins
    When the user sends a video and chooses 10 from the offered numbers of copies
    And the user presses the confirm button to no avail
    Then the user is shown "<answer>"
    And the user is offered the coin packages

    Examples:
      | language | answer                                              |
      | English  | Not enough coins: this needs 30, you have 10.       |
      | Russian  | Недостаточно монет: нужно 30, у вас 10.             |

  Scenario Outline: A failure is told in words from the list, never the error's text (<language>)
    Given the user's Telegram speaks <language>
    And the user holds 50 coins
    When the user sends a video and chooses 5 from the offered numbers of copies
    And the user presses the confirm button
    And the worker gives up on the order with "RuntimeError: ffmpeg exited 1: /tmp/w/source: Invalid data found"
    Then the user is shown "<reason>"
    And nothing the user was shown names the error, a file or FFmpeg

    Examples:
      | language | reason                           |
      | English  | (making the copies failed)       |
      | Russian  | (не получилось изготовить копии) |

  Scenario Outline: A photo is answered with what to send instead (<language>)
    Given the user's Telegram speaks <language>
    When the user sends a photo
    Then the user is shown "<answer>"

    Examples:
      | language | answer                          |
      | English  | That is a picture, not a video. |
      | Russian  | Это картинка, а не видео.       |

  Scenario Outline: Coins that expire are told how long they have left (<language>)
    Given the user's Telegram speaks <language>
    And the user holds 50 coins
    When the user asks for the balance
    Then the user is shown "<expiry>"

    Examples:
      | language | expiry                |
      | English  | expires in 30 days    |
      | Russian  | сгорят через 30 дней  |
