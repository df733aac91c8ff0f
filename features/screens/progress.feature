Feature: One message shows an order's progress
  The order's accepted screen is the order's progress message: it is edited as the order goes,
  with the copy being made and a bar, and the copies delivered so far. When the order ends it
  says how, and its Cancel button is gone. The copies themselves still come as videos.

  Background:
    Given the price list:
      | copies | coins per copy |
      | 1      | 5              |
      | 5      | 4              |
    And the user holds 50 coins

  Scenario: An English-speaking user follows an order of 5 copies in one message
    Given the user's Telegram speaks English
    When the user sends a video and chooses 5 from the offered numbers of copies
    And the user presses the confirm button
    And copy 1 is delivered and the worker is 40% through copy 2
    Then the progress message reads:
      """
      Order accepted: 5 copies, 20 coins reserved. You pay only for copies you receive.

      Making copy 2 of 5: ▰▰▰▰▱▱▱▱▱▱ 40%
      Delivered: 1 of 5
      """
    And the progress message has the button "Cancel"
    When the user cancels the order and the worker stops
    Then the progress message reads:
      """
      Cancelled. Charged 4 coins for copies you received; 16 coins returned.
      Delivered: 1 of 5
      """
    And the progress message has no button

  Scenario: A Russian-speaking user follows an order of 5 copies in one message
    Given the user's Telegram speaks Russian
    When the user sends a video and chooses 5 from the offered numbers of copies
    And the user presses the confirm button
    And copy 1 is delivered and the worker is 40% through copy 2
    Then the progress message reads:
      """
      Заказ принят: 5 копий, в резерве 20 монет. Оплачиваются только полученные копии.

      Делаю копию 2 из 5: ▰▰▰▰▱▱▱▱▱▱ 40%
      Доставлено: 1 из 5
      """
    And the progress message has the button "Отменить"
    When the user cancels the order and the worker stops
    Then the progress message reads:
      """
      Отменено. Списано за полученные копии: 4 монеты; возвращено: 16 монет.
      Доставлено: 1 из 5
      """
    And the progress message has no button

  Scenario: The worker's figures move the bar, a tenth at a time
    Given the user's Telegram speaks English
    When the user sends a video and chooses 5 from the offered numbers of copies
    And the user presses the confirm button
    And copy 1 is delivered and the worker is 40% through copy 2
    And the worker is 45% through copy 2
    Then the progress message still shows "Making copy 2 of 5: ▰▰▰▰▱▱▱▱▱▱ 40%"
    When the worker is 73% through copy 2
    Then the progress message still shows "Making copy 2 of 5: ▰▰▰▰▰▰▰▱▱▱ 73%"
